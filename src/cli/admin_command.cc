// `sluice admin create-superuser`: first-run bootstrap of an administrator.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "api/bootstrap.h"
#include "cli/command_registry.h"
#include "store/database.h"
#include "store/provision.h"

namespace {

struct AdminFlags {
  std::string data_dir = "./var";
  std::string email;
  std::string password;
  bool password_stdin = false;
};

int CreateSuperuser(const AdminFlags& f) {
  std::string password = f.password;
  if (f.password_stdin) {
    std::getline(std::cin, password);
  } else if (password.empty()) {
    if (const char* p = std::getenv("SLUICE_SUPERUSER_PASSWORD")) password = p;
  }
  if (password.empty()) {
    std::fprintf(stderr,
                 "sluice admin: give --password, --password-stdin or SLUICE_SUPERUSER_PASSWORD\n");
    return 2;
  }
  auto provisioned = sluice::store::ProvisionDatabase(f.data_dir);
  if (!provisioned.ok()) {
    std::fprintf(stderr, "sluice admin: %s\n", provisioned.status().ToString().c_str());
    return 1;
  }
  sluice::store::Database db((*provisioned)->url(), 1);
  auto st = sluice::api::CreateSuperuser(db, f.email, password);
  if (!st.ok()) {
    std::fprintf(stderr, "sluice admin: %s\n", st.ToString().c_str());
    return st.code() == sluice::common::Code::kAlreadyExists ? 3 : 1;
  }
  std::printf("created superuser %s\n", f.email.c_str());
  return 0;
}

sluice::cli::RegisterCommand admin_registration([](CLI::App& root) {
  auto flags = std::make_shared<AdminFlags>();
  auto* admin = root.add_subcommand("admin", "Administer users of this data-plane");
  admin->require_subcommand(1);
  auto* create = admin->add_subcommand("create-superuser", "Create a superuser with a password");
  create->add_option("--data-dir", flags->data_dir, "Data directory")->capture_default_str();
  create->add_option("--email", flags->email, "Email (the login)")->required();
  create->add_option("--password", flags->password, "Password (prefer --password-stdin)");
  create->add_flag("--password-stdin", flags->password_stdin, "Read the password from stdin");
  create->callback([flags] { sluice::cli::ExitCode() = CreateSuperuser(*flags); });
});

}  // namespace
