// Tests of the run report (src/report/): each section of the page from a small run
// database with the right numbers, a kernel source that tries to inject a script coming
// out escaped, clear errors for a missing or damaged database, the line diff, and the live
// server answering the page and state.json in-process.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "report/diff.h"
#include "report/html.h"
#include "report/report.h"
#include "report/run_data.h"
#include "sample_run.h"
#include "support/error.h"

namespace fs = std::filesystem;
using namespace ollie;
using namespace ollie::report;

namespace {

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("ollie_report_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string sample_db(const std::string& name) {
  const std::string path = (temp_dir(name) / "run.db").string();
  ollie_report_test::write_sample_run(path);
  return path;
}

// The text of the page's <section id="id"> ... </section>.
std::string section(const std::string& html, const std::string& id) {
  const size_t at = html.find("<section id=\"" + id + "\">");
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</section>", at) - at);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Report, EverySectionIsThereWithTheRunsNumbers) {
  const std::string db = sample_db("sections");
  const std::string html = report_html(db);
  // The summary: baseline 2 ms, best 1 ms (the side-by-side ratio 0.5 times the baseline).
  const std::string summary = section(html, "summary");
  EXPECT_NE(summary.find("id=\"baseline-time\">2 ms<"), std::string::npos) << summary;
  EXPECT_NE(summary.find("<span id=\"best-time\">1 ms</span> (2.00x faster), candidate 2 from llm, "
                         "verified at the full level"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("3 evaluated, 2 passed"), std::string::npos) << summary;
  EXPECT_NE(summary.find("stopped: evaluation budget spent"), std::string::npos) << summary;
  // The progress charts: one point per evaluated candidate in each, chains' best lines,
  // the roofline (0.1 ms) and baseline lines, and the note that peers are not recorded.
  const std::string progress = section(html, "progress");
  EXPECT_EQ(count(progress, "<svg class=\"chart\""), 2u);
  EXPECT_EQ(count(progress, "<g class=\"pt"), 2u * 3u) << progress;
  EXPECT_EQ(count(progress, "<g class=\"pt fail\""), 2u);  // the wrong one, above the plot
  EXPECT_NE(progress.find("chain 0: best so far"), std::string::npos);
  EXPECT_NE(progress.find("roofline 100 us"), std::string::npos);
  EXPECT_NE(progress.find("baseline 2 ms"), std::string::npos);
  EXPECT_NE(progress.find("records no peers"), std::string::npos);
  EXPECT_NE(progress.find("candidate 2 (llm, chain 0): pass, 1 ms"), std::string::npos);
  // The roofline chart: both roofs, the baseline and the best at 2 FLOP/byte.
  const std::string roof = section(html, "roofline");
  EXPECT_NE(roof.find("compute roof 100 GFLOP/s, memory roof 10 GB/s (DRAM)"), std::string::npos)
      << roof;
  EXPECT_NE(roof.find("baseline: 1 GFLOP/s"), std::string::npos) << roof;  // 2e6 / 2 ms
  EXPECT_NE(roof.find("best: 2 GFLOP/s"), std::string::npos) << roof;
  // The best kernel's schedule and lineage; the diff; the certificate's suites.
  const std::string best = section(html, "best");
  EXPECT_NE(best.find("split out0 n 8; vectorize out0 n_i"), std::string::npos) << best;
  EXPECT_NE(best.find("llm: model call 1, a fenced kernel -&gt; pass"), std::string::npos) << best;
  const std::string diff = section(html, "diff");
  EXPECT_NE(diff.find("lines removed: 1, added: 2"), std::string::npos) << diff;
  EXPECT_EQ(count(diff, "<tr class=\"chg\">"), 1u) << diff;
  EXPECT_EQ(count(diff, "<tr class=\"add\">"), 1u) << diff;
  EXPECT_EQ(count(diff, "<tr class=\"same\">"), 2u) << diff;
  const std::string cert = section(html, "certificate");
  EXPECT_NE(cert.find("<td>normal</td>"), std::string::npos) << cert;
  EXPECT_NE(cert.find("<td>special-values</td>"), std::string::npos) << cert;
  // The model calls: tokens, cost and what became of the answer.
  const std::string calls = section(html, "model-calls");
  EXPECT_NE(calls.find("1 call (1 ok): 1200 tokens in, 300 out, cost 0.0100"), std::string::npos)
      << calls;
  EXPECT_NE(calls.find("candidate 2: pass, accepted"), std::string::npos) << calls;
  EXPECT_NE(section(html, "events").find("final-verify"), std::string::npos);
}

TEST(Report, AKernelSourceCannotInjectScriptIntoThePage) {
  const std::string html = report_html(sample_db("escape"));
  EXPECT_EQ(html.find("<script"), std::string::npos);  // the static page has none at all
  EXPECT_EQ(html.find("alert(1)</script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);  // its CSP allows no script
  EXPECT_EQ(html.find("script-src"), std::string::npos);
  // The live page's one script is ours; the source is still escaped there.
  const std::string live = report_html(sample_db("escape-live"), {true, 2});
  EXPECT_EQ(count(live, "<script"), 1u);
  EXPECT_NE(live.find("&lt;/script&gt;&lt;script&gt;alert(1)"), std::string::npos);
  EXPECT_EQ(escape("<a href='x'>&\"\x01"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;\xEF\xBF\xBD");
}

TEST(Report, NoNetworkIsNeededToViewIt) {
  const std::string html = report_html(sample_db("offline"));
  EXPECT_FALSE(std::regex_search(html, std::regex("(src|href)\\s*=\\s*\"?[a-z]*:?//")));
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

TEST(Report, AMissingOrDamagedDatabaseIsAClearErrorNamingIt) {
  const fs::path dir = temp_dir("errors");
  const std::string missing = (dir / "nothing.db").string();
  std::string e = error_of([&] { report_html(missing); });
  EXPECT_NE(e.find("'" + missing + "' not found"), std::string::npos) << e;
  const std::string text = (dir / "text.db").string();
  std::ofstream(text) << "not a database\n";
  e = error_of([&] { report_html(text); });
  EXPECT_NE(e.find("'" + text + "' is not an ollie run database"), std::string::npos) << e;
  const std::string damaged = (dir / "damaged.db").string();
  std::ofstream(damaged, std::ios::binary)
      << std::string("SQLite format 3\0", 16) << std::string(4080, '\x7f');
  e = error_of([&] { report_html(damaged); });
  EXPECT_NE(e.find("'" + damaged + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("damaged or is not an ollie run database"), std::string::npos) << e;
  e = error_of(
      [&] { write_report(sample_db("unwritable"), (dir / "no/such/dir/r.html").string()); });
  EXPECT_NE(e.find("no/such/dir/r.html"), std::string::npos) << e;
}

TEST(Report, RunDataFollowsEachChainsBest) {
  const RunData d = read_run_data(sample_db("chains"));
  ASSERT_EQ(d.chains.size(), 2u);
  ASSERT_EQ(d.chains[0].steps.size(), 2u);  // the baseline, then candidate 2
  EXPECT_DOUBLE_EQ(d.chains[0].steps[1].seconds, 1e-3);
  EXPECT_EQ(d.chains[0].steps[1].ordinal, 2);
  EXPECT_DOUBLE_EQ(d.chains[0].steps[1].wall_seconds, 30);
  EXPECT_EQ(d.chains[1].steps.size(), 1u);  // only the baseline: its proposal was wrong
  ASSERT_EQ(d.lineage.size(), 2u);
  EXPECT_EQ(d.lineage[1].proposer, "baseline");
  EXPECT_TRUE(d.best_fully_verified);
}

TEST(Report, DiffPairsReplacedLinesAndKeepsTheRest) {
  const Diff d = diff_lines("a\nb\nc\n", "a\nx\nc\nd\n");
  ASSERT_EQ(d.rows.size(), 4u);
  EXPECT_EQ(d.rows[0].kind, DiffRow::Same);
  EXPECT_EQ(d.rows[1].kind, DiffRow::Changed);
  EXPECT_EQ(d.rows[1].left, "b");
  EXPECT_EQ(d.rows[1].right, "x");
  EXPECT_EQ(d.rows[2].kind, DiffRow::Same);
  EXPECT_EQ(d.rows[3].kind, DiffRow::Added);
  EXPECT_EQ(d.rows[3].right_line, 4);
  EXPECT_EQ(d.removed, 1);
  EXPECT_EQ(d.added, 2);
  EXPECT_EQ(diff_lines("same\n", "same\n").rows.size(), 1u);
}

TEST(Report, TheLiveServerAnswersThePageAndItsStateAndRefusesATakenPort) {
  const std::string db = sample_db("live");
  LiveServer server({"127.0.0.1", 0, 2});
  httplib::Client client("127.0.0.1", server.port());
  auto starting = client.Get("/state.json");
  ASSERT_TRUE(starting);
  EXPECT_EQ(starting->status, 503);  // no database named yet
  server.set_database(db);
  auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<span id=\"best-time\">1 ms</span>"), std::string::npos);
  EXPECT_NE(page->body.find("fetch('state.json'"), std::string::npos);
  auto state = client.Get("/state.json");
  ASSERT_TRUE(state);
  EXPECT_NE(state->body.find("\"evaluations\":3"), std::string::npos) << state->body;
  EXPECT_EQ(client.Get("/run.db")->status, 404);
  EXPECT_NE(client.Post("/", "x", "text/plain")->status, 200);  // read-only: GET alone
  const std::string e = error_of([&] { LiveServer second({"127.0.0.1", server.port(), 2}); });
  EXPECT_NE(e.find("127.0.0.1:" + std::to_string(server.port())), std::string::npos) << e;
  EXPECT_NE(e.find("taken"), std::string::npos) << e;
  server.stop();
}
