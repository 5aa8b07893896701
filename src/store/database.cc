#include "store/database.h"

namespace sluice::store {

Database::Database(std::string url, int pool_size) : url_(std::move(url)), pool_size_(pool_size) {}

Database::~Database() = default;

Database::Lease::Lease(Database& d) : db(d) {
  std::unique_lock lock(db.mu_);
  db.cv_.wait(lock, [&] { return !db.idle_.empty() || db.leased_ < db.pool_size_; });
  ++db.leased_;
  if (!db.idle_.empty()) {
    conn = std::move(db.idle_.back());
    db.idle_.pop_back();
  }
  lock.unlock();
  if (!conn || !conn->is_open()) {
    try {
      conn = std::make_unique<pqxx::connection>(db.url_);
    } catch (...) {
      std::lock_guard relock(db.mu_);
      --db.leased_;
      db.cv_.notify_one();
      throw;
    }
  }
}

Database::Lease::~Lease() {
  std::lock_guard lock(db.mu_);
  --db.leased_;
  if (conn && conn->is_open()) db.idle_.push_back(std::move(conn));
  db.cv_.notify_one();
}

}  // namespace sluice::store
