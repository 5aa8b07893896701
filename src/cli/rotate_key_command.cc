// `sluice admin rotate-key`: puts a new primary configuration key in front of
// the ring and re-encrypts every stored configuration under it.
//   - with <data-dir>/config.key: a fresh key is generated and written first
//     (old keys stay below it, decrypt-only, unless --retire-old-keys);
//   - with SLUICE_CONFIG_KEY: the operator has already put the new key first
//     ("new,old"); this re-encrypts under it and the old one can then go.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/command_registry.h"
#include "model/config_keys.h"
#include "secrets/key_ring.h"
#include "store/database.h"
#include "store/provision.h"

namespace {

struct RotateFlags {
  std::string data_dir = "./var";
  bool retire = false;
};

int Rotate(const RotateFlags& f) {
  auto ring = sluice::secrets::KeyRing::Load(f.data_dir);
  if (!ring.ok()) {
    std::fprintf(stderr, "sluice admin rotate-key: %s\n", ring.status().ToString().c_str());
    return 1;
  }
  const char* env = std::getenv("SLUICE_CONFIG_KEY");
  bool from_env = env != nullptr && *env != '\0';
  const std::string path = sluice::secrets::KeyFilePath(f.data_dir);
  std::vector<sluice::secrets::Key> keys = ring->keys();
  if (!from_env) {
    keys.insert(keys.begin(), sluice::secrets::KeyRing::RandomKey());
    // The new key is on disk before any row depends on it.
    auto st = sluice::secrets::WriteKeyFile(path, keys);
    if (!st.ok()) {
      std::fprintf(stderr, "sluice admin rotate-key: %s\n", st.ToString().c_str());
      return 1;
    }
    ring = sluice::secrets::KeyRing::Load(f.data_dir);
    if (!ring.ok()) return 1;
  }
  auto provisioned = sluice::store::ProvisionDatabase(f.data_dir);
  if (!provisioned.ok()) {
    std::fprintf(stderr, "sluice admin rotate-key: %s\n", provisioned.status().ToString().c_str());
    return 1;
  }
  sluice::store::Database db((*provisioned)->url(), 1);
  sluice::model::ReencryptCounts counts;
  try {
    counts = db.Transact([&](pqxx::work& tx) {
      return sluice::model::ReencryptConfigurations(tx, *ring, f.retire);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice admin rotate-key: nothing changed: %s\n", e.what());
    return 1;
  }
  if (f.retire && !from_env) {
    auto st = sluice::secrets::WriteKeyFile(path, {ring->primary()});
    if (!st.ok()) {
      std::fprintf(stderr, "sluice admin rotate-key: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  std::printf(
      "primary key %s: re-encrypted %ld connectors, %ld warehouses; %ld idempotency "
      "records dropped%s\n",
      ring->primary().id.c_str(), counts.connectors, counts.warehouses, counts.idempotency_dropped,
      from_env ? "; now remove the old key from SLUICE_CONFIG_KEY" : "");
  return 0;
}

void AddRotateKey(CLI::App& admin) {
  auto flags = std::make_shared<RotateFlags>();
  auto* cmd = admin.add_subcommand("rotate-key",
                                   "Re-encrypt stored configurations under a new primary key");
  cmd->add_option("--data-dir", flags->data_dir, "Data directory (config.key, database)")
      ->capture_default_str();
  cmd->add_flag("--retire-old-keys", flags->retire,
                "Drop old keys from config.key (and idempotency records under them)");
  cmd->callback([flags] { sluice::cli::ExitCode() = Rotate(*flags); });
}

CLI::App* FindAdmin(CLI::App& root) {
  for (auto* sub : root.get_subcommands([](CLI::App* a) { return a->get_name() == "admin"; })) {
    return sub;
  }
  return nullptr;
}

sluice::cli::RegisterCommand rotate_key_registration([](CLI::App& root) {
  // "admin" belongs to admin_command.cc, whose registrar may run after this
  // one: attach then, just before parsing, once every command exists.
  if (CLI::App* admin = FindAdmin(root)) return AddRotateKey(*admin);
  root.preparse_callback([&root](std::size_t) {
    if (CLI::App* admin = FindAdmin(root)) AddRotateKey(*admin);
  });
});

}  // namespace
