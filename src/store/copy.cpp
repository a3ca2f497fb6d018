// Copying a run between storages (Store::copy; `ollie export`, `ollie import`): every row of
// every table, ids kept, in pages, into a new run created in one transaction.
#include <bit>
#include <mutex>

#include "store/db.h"
#include "store/schema.h"
#include "store/store.h"
#include "support/error.h"

namespace ollie::store {

namespace {

// A table's columns and how each travels: i integer, r real, t text.
struct Table {
  const char* name;
  const char* columns;
  const char* kinds;
};

// In an order that keeps the foreign keys (workers before evaluations, candidates before
// the rows that name them). Claims are not copied: they matter only while workers run.
constexpr Table kTables[] = {
    {"workers",
     "id, name, fingerprint, machine_json, seed, first_chain, chains, started, "
     "heartbeat, stopped",
     "itttiiitrt"},
    {"candidates", "id, hash, source, schedule, rewrites, parent, proposer, created, predicted",
     "ittttitt"
     "r"},
    {"evaluations",
     "id, candidate, verdict, message, penalty, certificate_json, median_seconds, "
     "min_seconds, mad_seconds, ratio_vs_baseline, rounds, cost, eval_seconds, "
     "created, worker",
     "itttrtrrrrirrti"},
    {"steps",
     "id, step, chain, proposed, \"current\", accepted, temperature, cost_current, "
     "cost_proposed, note, created",
     "iiiiiirrrtt"},
    {"events", "id, kind, text, created", "ittt"},
    {"model_calls",
     "id, proposer, request, answer, status, http_status, tokens_in, tokens_out, "
     "cost, seconds, created",
     "ittttiiirrt"},
};

constexpr int kPage = 200;

// The rows of `t` with id > after, at most kPage, into `to`; the last id copied (after
// when none).
int64_t copy_page(backend::Backend& from, backend::Backend& to, const Table& t, int64_t after) {
  const std::string kinds = t.kinds;
  std::string placeholders;
  for (size_t i = 0; i < kinds.size(); ++i)
    placeholders += (i ? ", ?" : "?") + std::to_string(i + 1);
  auto select = from.prepare(std::string("SELECT ") + t.columns + " FROM " + t.name +
                             " WHERE id > ?1 ORDER BY id LIMIT ?2");
  auto insert = to.prepare(std::string("INSERT INTO ") + t.name + "(" + t.columns + ") VALUES(" +
                           placeholders + ")");
  backend::Query q(*select, "reading the run to copy");
  q.int64(1, after).int64(2, kPage);
  while (q.next()) {
    backend::Query w(*insert, "writing the copy");
    for (size_t c = 0; c < kinds.size(); ++c) {
      const int col = static_cast<int>(c), param = col + 1;
      if (q.col_null(col))
        w.null(param);
      else if (kinds[c] == 'i')
        w.int64(param, q.col_int64(col));
      else if (kinds[c] == 'r')
        w.real(param, q.col_real(col));
      else
        w.text(param, q.col_text(col));
    }
    w.run();
    after = q.col_int64(0);
  }
  return after;
}

}  // namespace

void Store::copy(const Location& from_where, const Location& to_where) {
  Store from = open(from_where);
  Store to = create(to_where, from.run());
  backend::Backend& src = *from.db_->conn;
  backend::Backend& dst = *to.db_->conn;
  // The source from one snapshot (workers may be writing it), the copy in one transaction.
  std::lock_guard<std::recursive_mutex> lock(from.db_->mu);
  src.begin_snapshot("reading the run to copy");
  struct EndRead {
    backend::Backend& b;
    ~EndRead() { b.rollback(); }
  } end_read{src};
  auto tx = to.transaction();
  for (const Table& t : kTables) {
    int64_t after = 0;
    while (true) {
      const int64_t last = copy_page(src, dst, t, after);
      if (last == after) break;
      after = last;
    }
    // A server's id sequences continue after the copied ids.
    if (dst.dialect() == backend::Dialect::PostgreSQL)
      dst.exec(std::string("SELECT setval(pg_get_serial_sequence('") + t.name +
                   "', 'id'), coalesce(max(id), 1), max(id) IS NOT NULL) FROM " + t.name,
               "continuing the ids");
  }
  // The server's counters of the rows copied in (schema::kPostgresCounters).
  if (dst.dialect() == backend::Dialect::PostgreSQL)
    dst.exec(schema::kRecountCounters, "counting the rows copied");
  tx.commit();
  to.db_->counts_cache.reset();
  to.checkpoint();
}

}  // namespace ollie::store
