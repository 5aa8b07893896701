// The data-plane database: a small pool of libpq connections for one URL.
// Repositories take a pqxx::work&, so several writes share one transaction.
#pragma once

#include <pqxx/pqxx>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::store {

class Database {
 public:
  // url: a libpq connection string or URI. pool_size: connections kept open.
  explicit Database(std::string url, int pool_size = 4);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& url() const { return url_; }

  // Runs fn(pqxx::nontransaction&) on a pooled connection: each statement
  // commits on its own, and a text of several statements runs as one
  // implicit transaction in a single round trip (the hot paths' use).
  template <typename Fn>
  auto Direct(Fn&& fn) {
    Lease lease(*this);
    pqxx::nontransaction tx(*lease.conn);
    return fn(tx);
  }

  // Runs fn(pqxx::work&) in one transaction and commits when it returns.
  // An exception rolls back and propagates; a broken connection is discarded.
  template <typename Fn>
  auto Transact(Fn&& fn) {
    Lease lease(*this);
    pqxx::work tx(*lease.conn);
    if constexpr (std::is_void_v<decltype(fn(tx))>) {
      fn(tx);
      tx.commit();
    } else {
      auto result = fn(tx);
      tx.commit();
      return result;
    }
  }

 private:
  struct Lease {
    explicit Lease(Database& db);
    ~Lease();
    Database& db;
    std::unique_ptr<pqxx::connection> conn;
  };

  std::string url_;
  int pool_size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  int leased_ = 0;
};

}  // namespace sluice::store
