// The live page server (see report.h): cpp-httplib on one address and port, read-only.
#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "report/report.h"
#include "support/error.h"

namespace ollie::report {

struct LiveServer::Impl {
  ServeOptions options;
  httplib::Server server;
  std::thread thread;
  std::mutex mu;
  std::string db_path;  // guarded by mu

  std::string database() {
    std::lock_guard<std::mutex> lock(mu);
    return db_path;
  }

  // Answers one page with `make(db)`, or 503 before the database is named, 500 with the
  // error's text (plain, so nothing in it is markup) when it cannot be read.
  template <typename Make>
  void answer(httplib::Response& res, const char* type, Make make) {
    res.set_header("Cache-Control", "no-store");
    res.set_header("X-Content-Type-Options", "nosniff");
    const std::string db = database();
    if (db.empty()) {
      res.status = 503;
      res.set_header("Retry-After", "1");
      res.set_content("the run is starting; reload in a moment\n", "text/plain; charset=utf-8");
      return;
    }
    try {
      res.set_content(make(db), type);
    } catch (const std::exception& e) {
      res.status = 500;
      res.set_content(std::string(e.what()) + "\n", "text/plain; charset=utf-8");
    }
  }

  void routes() {
    const double poll = options.poll_seconds;
    server.Get("/", [this, poll](const httplib::Request&, httplib::Response& res) {
      answer(res, "text/html; charset=utf-8", [poll](const std::string& db) {
        return report_html(db, {true, poll});
      });
    });
    server.Get("/report.html", [this](const httplib::Request&, httplib::Response& res) {
      answer(res, "text/html; charset=utf-8",
             [](const std::string& db) { return report_html(db); });
    });
    server.Get("/state.json", [this](const httplib::Request&, httplib::Response& res) {
      answer(res, "application/json", [](const std::string& db) { return state_json(db); });
    });
  }
};

LiveServer::LiveServer(const ServeOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second server
  // would share a port that is taken instead of being refused.
  impl_->server.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  impl_->routes();
  if (options.port < 0 || options.port > 65535)
    throw UserError(
        fmt::format("--port {}: not a port; give 1 to 65535 (0: any free port)", options.port));
  const bool bound = options.port == 0
                         ? (impl_->options.port = impl_->server.bind_to_any_port(options.bind)) > 0
                         : impl_->server.bind_to_port(options.bind, options.port);
  if (!bound)
    throw UserError(fmt::format(
        "cannot serve on {}:{}: the port is taken (is another `ollie serve` running?) or the "
        "address is not this machine's; choose another with --port N (or --bind ADDR)",
        options.bind, options.port));
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  // stop() only stops a server that is running: wait until it is.
  for (int i = 0; i < 500 && !impl_->server.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

LiveServer::~LiveServer() { stop(); }

void LiveServer::set_database(const std::string& db_path) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->db_path = db_path;
}

void LiveServer::stop() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string LiveServer::url() const {
  const std::string& host = impl_->options.bind;
  return fmt::format("http://{}:{}/", host.find(':') != std::string::npos ? "[" + host + "]" : host,
                     impl_->options.port);
}

int LiveServer::port() const { return impl_->options.port; }

}  // namespace ollie::report
