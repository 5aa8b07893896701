// `sluice login`: exchanges email + password for tokens and saves them
// (mode 0600) for the other client commands.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/api_client.h"
#include "cli/command_registry.h"

namespace {

struct LoginFlags {
  std::string url = "http://127.0.0.1:8080";
  std::string email;
  std::string password;
  bool password_stdin = false;
  std::string ca_file;  // verifies an https API; saved with the tokens
};

int Login(const LoginFlags& f) {
  std::string password = f.password;
  if (f.password_stdin) std::getline(std::cin, password);
  if (password.empty()) {
    std::fprintf(stderr, "sluice login: give --password or --password-stdin\n");
    return 2;
  }
  auto r = sluice::cli::CallApi(f.url, "POST", "/api/v1/auth/login",
                                {{"email", f.email}, {"password", password}}, "", f.ca_file);
  if (r.status != 200 || !r.body.is_object()) {
    std::fprintf(stderr, "sluice login: %s\n",
                 r.status == 0 ? r.error.c_str()
                 : r.body.is_object() && r.body.contains("error")
                     ? r.body["error"].value("message", "failed").c_str()
                     : "failed");
    return 1;
  }
  sluice::cli::Credentials c{f.url, r.body.value("access_token", ""),
                             r.body.value("refresh_token", ""), f.ca_file};
  if (!sluice::cli::SaveCredentials(c)) {
    std::fprintf(stderr, "sluice login: cannot write %s\n", sluice::cli::CredentialsPath().c_str());
    return 1;
  }
  std::printf("logged in to %s as %s\n", f.url.c_str(), f.email.c_str());
  return 0;
}

sluice::cli::RegisterCommand login_registration([](CLI::App& root) {
  auto f = std::make_shared<LoginFlags>();
  auto* cmd = root.add_subcommand("login", "Log in to a Sluice API and save the tokens");
  cmd->add_option("--url", f->url, "API base URL")->capture_default_str();
  cmd->add_option("--email", f->email, "Email")->required();
  cmd->add_option("--password", f->password, "Password (prefer --password-stdin)");
  cmd->add_flag("--password-stdin", f->password_stdin, "Read the password from stdin");
  cmd->add_option("--ca-file", f->ca_file,
                  "PEM CA file an https API is verified with (e.g. its --tls-cert); saved for "
                  "the other commands");
  cmd->callback([f] { sluice::cli::ExitCode() = Login(*f); });
});

}  // namespace
