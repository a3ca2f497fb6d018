// The report page (see report.h): its shell (inline CSS, a Content-Security-Policy, the live
// form's one inline script) around the sections, and state.json.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "report/charts.h"
#include "report/html.h"
#include "report/report.h"
#include "report/run_data.h"
#include "report/sections.h"
#include "store/run_view.h"
#include "support/error.h"
#include "support/sha256.h"

namespace ollie::report {

namespace {

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{padding:6px 24px;background:#222;color:#eee;font-size:13px}
main{max-width:1180px;margin:0 auto;padding:8px 24px 40px}
section{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 18px;margin:14px 0}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #eee}h3{font-size:15px}
table{border-collapse:collapse}table.kv th{text-align:left;padding:2px 14px 2px 0;color:#555}
table.grid td,table.grid th{border:1px solid #ddd;padding:2px 8px;font-size:13px;vertical-align:top}
.mono,pre,table.diff{font-family:ui-monospace,monospace;font-size:12px}
pre{background:#f4f4f4;padding:8px;overflow:auto;max-height:360px}
table.diff{width:100%;table-layout:fixed}table.diff td{white-space:pre-wrap;word-break:break-all;padding:0 6px}
table.diff td.n{width:3.5em;color:#999;text-align:right}
tr.del td:nth-child(2),tr.chg td:nth-child(2){background:#fdd}
tr.add td:nth-child(4),tr.chg td:nth-child(4){background:#dfd}
.note{color:#666;font-style:italic}.dim{color:#888}
svg.chart{width:100%;height:auto;background:#fff}
rect.plot{fill:none;stroke:#bbb}line.grid{stroke:#eee}
text.tick{font-size:11px;fill:#555}text.axis{font-size:12px;fill:#333}
text.lbl{font-size:11px}text.band{font-size:11px;fill:#999}
.legend span{margin-right:12px;white-space:nowrap}svg.sw{width:12px;height:12px;vertical-align:middle;margin-right:3px}
.ln{display:inline-block;width:22px;border-top:2px solid;vertical-align:middle;margin:0 4px}
.ln.dash{border-top-style:dashed}
)css";

// The live form's script: polls state.json; when the run has new rows, fetches the page
// as served now and swaps its <main> in. It never reads text from the database itself.
std::string live_script(double poll_seconds) {
  return fmt::format(
      "(function(){{var v=null,s=document.getElementById('live');"
      "function say(t){{s.textContent=t;}}"
      "function swap(){{fetch('./',{{cache:'no-store'}}).then(function(r){{return r.text();}})"
      ".then(function(t){{var d=new DOMParser().parseFromString(t,'text/html');"
      "var m=d.querySelector('main');if(m)document.querySelector('main').replaceWith(m);}});}}"
      "function poll(){{fetch('state.json',{{cache:'no-store'}}).then(function(r){{return "
      "r.json();}})"
      ".then(function(j){{if(v!==null&&j.version!==v)swap();v=j.version;"
      "say('live: '+j.evaluations+' evaluations, checked '+new Date().toLocaleTimeString());}})"
      ".catch(function(){{say('live: the server does not answer (stopped?); this is the run as "
      "it last was');}});}}"
      "poll();setInterval(poll,{});}})();",
      static_cast<int>(poll_seconds * 1000));
}

// The CSP source of a script: 'sha256-<base64 of its digest>'.
std::string script_hash(const std::string& script) {
  const std::string hex = sha256_hex(script);
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  static const char* b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size())
      n |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
    out += b64[(n >> 18) & 63];
    out += b64[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? b64[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? b64[n & 63] : '=';
  }
  return "'sha256-" + out + "'";
}

std::string page(const RunData& d, const PageOptions& options) {
  const std::string script = options.live ? live_script(options.poll_seconds) : "";
  // No network, no script but ours: what a kernel's source might smuggle in cannot run.
  const std::string csp =
      "default-src 'none'; style-src 'unsafe-inline'; img-src data:" +
      (options.live ? "; connect-src 'self'; script-src " + script_hash(script) : "");
  std::string s = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>ollie report: {}</title>\n<style>{}</style></head>\n<body>\n"
      "<header>ollie report of {} <span id=\"live\">{}</span></header>\n<main>\n",
      csp, escape(d.run.entry), kStyle, escape(d.db_path),
      options.live ? "" : "(a snapshot; `ollie serve` shows it live)");
  s += summary_section(d) + progress_charts(d) + roofline_chart(d) + best_kernel_section(d) +
       diff_section(d) + certificate_section(d) + model_calls_section(d) + events_section(d);
  s += "</main>\n";
  if (options.live) s += "<script>" + script + "</script>\n";
  return s + "</body></html>\n";
}

}  // namespace

std::string report_html(const std::string& db_path, const PageOptions& options) {
  return page(read_run_data(db_path), options);
}

void write_report(const std::string& db_path, const std::string& out_path) {
  const std::string html = report_html(db_path);
  const std::filesystem::path out(out_path);
  const std::filesystem::path tmp = out.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << html;
    if (!f.flush())
      throw UserError("-o " + out_path +
                      ": cannot write the report; check that the directory "
                      "exists and is writable");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out, ec);
  if (ec) throw UserError("-o " + out_path + ": cannot write the report: " + ec.message());
}

std::string state_json(const std::string& db_path) {
  const store::RunView view = store::RunView::open(db_path);
  const store::RowMarks m = view.marks();
  return nlohmann::json{{"version", fmt::format("{}.{}.{}.{}.{}", m.candidates, m.evaluations,
                                                m.steps, m.events, m.model_calls)},
                        {"candidates", m.candidates},
                        {"evaluations", m.evaluations},
                        {"steps", m.steps},
                        {"events", m.events},
                        {"model_calls", m.model_calls}}
      .dump();
}

}  // namespace ollie::report
