// The fixture shared by the tests that drive ollie against the fake model
// (fake_model_server.h): the client settings pointing at the server, the user message of
// a request the server saw, the texts of a run's events of one kind, and (for the search
// tests) the small softmax the model proposes for and a scratch run database of it.
#pragma once

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "fake_model_server.h"
#include "llm/llm.h"
#include "spec/spec.h"
#include "store/store.h"

namespace ollie::llm::testing {

// The user message of a request the server saw.
inline std::string user_message(const FakeModelServer::Seen& seen) {
  return nlohmann::json::parse(seen.body)["messages"][1]["content"].get<std::string>();
}

// The texts of the events of `kind` in the run database `db`, in order.
inline std::vector<std::string> events_of(const std::filesystem::path& db,
                                          const std::string& kind) {
  std::vector<std::string> out;
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(raw, "SELECT text FROM events WHERE kind = ?1 ORDER BY id", -1, &q,
                               nullptr),
            SQLITE_OK);
  sqlite3_bind_text(q, 1, kind.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(q) == SQLITE_ROW)
    out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(q, 0)));
  sqlite3_finalize(q);
  sqlite3_close(raw);
  return out;
}

// The client settings for `server` with `key` (OpenAI protocol, no retries; a test that
// wants retries sets them).
inline ModelConfig fake_model_config(const FakeModelServer& server, std::string key) {
  ModelConfig c;
  c.protocol = Protocol::OpenAI;
  c.base_url = server.openai_base();
  c.model = "test-model";
  c.api_key = std::move(key);
  c.total_timeout_seconds = 30;
  c.max_retries = 0;
  return c;
}

// examples/softmax.py's source, and its graph at `dims` (softmax(): M=8, N=32).
inline const std::string& softmax_source() {
  static const std::string s = [] {
    std::ifstream in(std::filesystem::path(OLLIE_SOURCE_DIR) / "examples" / "softmax.py");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  return s;
}

inline ir::Graph softmax_at(const ir::DimBindings& dims) {
  spec::SpecOptions o;
  o.dim_overrides = dims;
  return spec::compile_spec("softmax.py", softmax_source(), o);
}

inline const ir::Graph& softmax() {
  static const ir::Graph g = softmax_at({{"M", 8}, {"N", 32}});
  return g;
}

// A scratch folder (removed at the end) named after `prefix`, and a run database of the
// softmax at M=8, N=32 in it.
struct RunDir {
  std::filesystem::path dir;
  explicit RunDir(const std::string& prefix) {
    static int n = 0;
    dir = std::filesystem::temp_directory_path() /
          (prefix + std::to_string(getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~RunDir() { std::filesystem::remove_all(dir); }
  store::Store create() const {
    store::RunInfo info;
    info.spec_path = "softmax.py";
    info.spec_source = softmax_source();
    info.entry = "softmax";
    info.dims_json = R"({"M": 8, "N": 32})";
    info.machine_json = "{}";
    info.options_json = "{}";
    info.seed = 3;
    return store::Store::create((dir / "run.db").string(), info);
  }
};

}  // namespace ollie::llm::testing
