// Flame graphs: the SVG is well-formed XML, frames have the widths the tree's
// values give, colours follow frame kinds (or changes, for a differential
// graph), and in a real browser (headless Chromium) clicking zooms and
// searching highlights.
#include <doctest/doctest.h>
#include <expat.h>

#include <cmath>
#include <map>
#include <regex>
#include <sstream>

#include "reports/flame.h"
#include "tests/interop_util.h"

namespace {

using cct::FrameKind;

struct SvgFrame {
  std::string name, kind, fill, title;
  double x = 0, w = 0, fx = 0, fw = 0;
  int depth = 0;
};

struct SvgDoc {
  std::map<std::string, std::string> root;  // the <svg> element's attributes
  std::vector<SvgFrame> frames;
  std::string error;  // expat's, when not well-formed
};

// Parses with expat: a document that is not well-formed XML fails here.
SvgDoc ParseSvg(const std::string& text) {
  struct State {
    SvgDoc doc;
    SvgFrame* current = nullptr;
    bool in_title = false;
  } st;
  XML_Parser p = XML_ParserCreate("UTF-8");
  XML_SetUserData(p, &st);
  XML_SetElementHandler(
      p,
      [](void* data, const char* el, const char** attrs) {
        auto& s = *static_cast<State*>(data);
        std::map<std::string, std::string> a;
        for (size_t i = 0; attrs[i]; i += 2) a[attrs[i]] = attrs[i + 1];
        const std::string tag = el;
        if (tag == "svg") s.doc.root = a;
        if (tag == "g" && a.count("class") && a["class"].substr(0, 1) == "f") {
          s.doc.frames.emplace_back();
          s.current = &s.doc.frames.back();
          s.current->name = a["data-n"];
          s.current->kind = a["data-k"];
          s.current->depth = std::stoi(a["data-d"]);
          s.current->fx = std::stod(a["data-x"]);
          s.current->fw = std::stod(a["data-w"]);
        } else if (tag == "rect" && s.current) {
          s.current->x = std::stod(a["x"]);
          s.current->w = std::stod(a["width"]);
          s.current->fill = a["fill"];
        } else if (tag == "title" && s.current) {
          s.in_title = true;
        }
      },
      [](void* data, const char* el) {
        auto& s = *static_cast<State*>(data);
        if (std::string(el) == "g") s.current = nullptr;
        if (std::string(el) == "title") s.in_title = false;
      });
  XML_SetCharacterDataHandler(p, [](void* data, const char* text, int len) {
    auto& s = *static_cast<State*>(data);
    if (s.in_title && s.current) s.current->title.append(text, static_cast<size_t>(len));
  });
  if (XML_Parse(p, text.data(), static_cast<int>(text.size()), 1) == XML_STATUS_ERROR)
    st.doc.error = std::string(XML_ErrorString(XML_GetErrorCode(p))) + " at line " +
                   std::to_string(XML_GetCurrentLineNumber(p));
  XML_ParserFree(p);
  return st.doc;
}

const SvgFrame* Find(const SvgDoc& d, const std::string& name) {
  for (const SvgFrame& f : d.frames)
    if (f.name == name) return &f;
  return nullptr;
}

// samples: main 10, alpha 50 (beta 20 below it), gamma 15 (+ a sliver),
// [nvtx] step 5 with a GPU kernel of 20 below. Total 120.01.
cct::Tree FlameFixture(double alpha = 50, double gamma = 15) {
  cct::Tree t;
  const cct::MetricId s = *t.metrics().RegisterStandard("samples");
  auto n = [&](cct::NodeId p, FrameKind k, const std::string& name) { return t.InternChild(p, t.InternFrame(k, name)); };
  const cct::NodeId thread = n(cct::kRootNode, FrameKind::kThread, "main thread");
  const cct::NodeId main = n(thread, FrameKind::kFunction, "main");
  t.AddValue(main, s, 10);
  const cct::NodeId a = n(main, FrameKind::kFunction, "alpha");
  t.AddValue(a, s, alpha);
  t.AddValue(n(a, FrameKind::kFunction, "beta"), s, 20);
  const cct::NodeId g = n(main, FrameKind::kFunction, "gamma");
  t.AddValue(g, s, gamma);
  t.AddValue(n(g, FrameKind::kFunction, "sliver"), s, 0.01);  // 0.1 px of 1180: below the default minimum
  const cct::NodeId step = n(main, FrameKind::kNvtx, "step");
  t.AddValue(step, s, 5);
  t.AddValue(n(n(step, FrameKind::kGpuOp, "<gpu kernel>"), FrameKind::kKernel, "kern"), s, 20);
  return t;
}

constexpr double kPlot = 1200 - 2 * 10;  // default width minus padding

}  // namespace

TEST_CASE("flame: well-formed SVG whose frame widths are the inclusive values over the total") {
  testutil::TempDir dir;
  const std::string db = dir / "f.db";
  interop::StoreRun(db, FlameFixture(), "flame");
  const std::string svg = dir / "f.svg";
  auto r = interop::Query(db, {"flame", "latest", "-o", svg});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const SvgDoc d = ParseSvg(testutil::ReadFileOrDie(svg));
  REQUIRE_MESSAGE(d.error.empty(), d.error);
  CHECK(d.root.at("data-metric") == "samples");
  const double total = 10 + 50 + 20 + 15 + 0.01 + 5 + 20;
  auto width_of = [&](const std::string& name) {
    const SvgFrame* f = Find(d, name);
    REQUIRE_MESSAGE(f != nullptr, name);
    return f->w;
  };
  CHECK(width_of("all") == doctest::Approx(kPlot).epsilon(1e-4));
  CHECK(width_of("main") == doctest::Approx(kPlot).epsilon(1e-4));
  CHECK(width_of("alpha") == doctest::Approx(kPlot * 70 / total).epsilon(1e-3));
  CHECK(width_of("beta") == doctest::Approx(kPlot * 20 / total).epsilon(1e-3));
  CHECK(width_of("gamma") == doctest::Approx(kPlot * 15.01 / total).epsilon(1e-3));
  CHECK(width_of("[nvtx] step") == doctest::Approx(kPlot * 25 / total).epsilon(1e-3));
  CHECK(Find(d, "sliver") == nullptr);  // narrower than 0.1 px
  CHECK(d.frames.size() == 9);          // all, thread, main, alpha, beta, gamma, step, gpu op, kern
  // Siblings in name order, each starting where the previous one ends.
  const SvgFrame *a = Find(d, "alpha"), *g = Find(d, "gamma"), *s = Find(d, "[nvtx] step");
  CHECK(a->x < g->x);
  CHECK(g->x < s->x);
  CHECK(g->fx == doctest::Approx(a->fx + a->fw));
  CHECK(a->depth == 3);
  // Colour classes by kind.
  CHECK(Find(d, "alpha")->kind == "cpu");
  CHECK(Find(d, "[nvtx] step")->kind == "nvtx");
  CHECK(Find(d, "kern")->kind == "gpu");
  CHECK(Find(d, "<gpu kernel>")->kind == "gpu");
  CHECK(Find(d, "[thread] main thread")->kind == "thread");
  // Hover text: full name and values.
  CHECK(Find(d, "alpha")->title.find("samples: 70 (58.3%), self 50") != std::string::npos);

  // Every minimum: the sliver appears with --min-width 0.
  auto all = interop::Query(db, {"flame", "latest", "--min-width", "0", "-o", dir / "all.svg"});
  REQUIRE(all.exit_code == 0);
  CHECK(Find(ParseSvg(testutil::ReadFileOrDie(dir / "all.svg")), "sliver") != nullptr);

  // Names that are not XML-safe still give well-formed XML.
  cct::Tree odd;
  const cct::MetricId m = *odd.metrics().RegisterStandard("samples");
  odd.AddValue(interop::AddPath(odd, {{FrameKind::kFunction, "operator<<(std::ostream&, \"x\" 'y')"},
                                      {FrameKind::kFunction, std::string("bad\xff\x01utf8")}}),
               m, 1);
  std::ostringstream out;
  reports::FlameOptions fo;
  REQUIRE(reports::WriteFlameGraph(odd, fo, out).ok());
  const SvgDoc od = ParseSvg(out.str());
  CHECK_MESSAGE(od.error.empty(), od.error);
  CHECK(Find(od, "operator<<(std::ostream&, \"x\" 'y')") != nullptr);

  // Bad requests: one line, exit 2.
  auto derived = interop::Query(db, {"flame", "latest", "-m", "nope", "-o", dir / "x.svg"});
  CHECK(derived.exit_code == 2);
  CHECK(testutil::LineCount(derived.err) == 1);
}

TEST_CASE("flame: differential graph colours by change, widths from the candidate") {
  const cct::Tree base = FlameFixture(30, 25), cand = FlameFixture(50, 15);
  std::ostringstream out;
  reports::FlameOptions fo;
  fo.metric = "samples";
  REQUIRE(reports::WriteDiffFlameGraph(base, cand, fo, out).ok());
  const SvgDoc d = ParseSvg(out.str());
  REQUIRE_MESSAGE(d.error.empty(), d.error);
  CHECK(d.root.at("data-mode") == "diff");
  auto rgb = [](const std::string& fill) {
    int r = 0, g = 0, b = 0;
    std::sscanf(fill.c_str(), "rgb(%d,%d,%d)", &r, &g, &b);
    return std::array<int, 3>{r, g, b};
  };
  // alpha: 30 -> 50 (slower): red; gamma: 25 -> 15 (faster): blue, fainter
  // (a change of 10 against the largest, 20); beta unchanged: white.
  const auto alpha = rgb(Find(d, "alpha")->fill), gamma = rgb(Find(d, "gamma")->fill), beta = rgb(Find(d, "beta")->fill);
  CHECK(alpha[0] == 255);
  CHECK(alpha[1] < 100);
  CHECK(gamma[2] == 255);
  CHECK(gamma[0] < 255);
  CHECK(gamma[0] > alpha[1]);  // less intense than alpha's red
  CHECK(beta == std::array<int, 3>{250, 250, 250});
  // Widths are the candidate's.
  CHECK(Find(d, "alpha")->w == doctest::Approx(kPlot * 70 / 120.01).epsilon(1e-3));
  CHECK(Find(d, "alpha")->title.find("baseline: 50; change +20 (+40.0%), self +20") != std::string::npos);
  // The baseline must fit the tree.
  reports::FlameBaseline wrong;
  wrong.inclusive.assign(3, 0);
  wrong.exclusive.assign(3, 0);
  fo.baseline = &wrong;
  std::ostringstream ignored;
  CHECK(reports::WriteFlameGraph(cand, fo, ignored).code() == cct::ErrorCode::kInvalidArgument);
}

TEST_CASE("flame: headless Chromium renders it, clicking a frame zooms, search highlights") {
  const std::string chromium = interop::FindProgram("chromium");
  if (chromium.empty()) {
    MESSAGE("SKIPPED: Chromium is not installed (Debian chromium; scripts/install-deps.sh installs it)");
    return;
  }
  testutil::TempDir dir;
  const std::string db = dir / "f.db";
  interop::StoreRun(db, FlameFixture(), "flame");
  const std::string svg = dir / "f.svg";
  REQUIRE(interop::Query(db, {"flame", "latest", "-o", svg}).exit_code == 0);
  const std::map<std::string, std::string> env = {{"HOME", dir.path()}};
  auto browse = [&](std::vector<std::string> extra, const std::string& fragment) {
    std::vector<std::string> argv{chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                  "--no-first-run", "--user-data-dir=" + (dir / "profile")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("file://" + svg + fragment);
    return testutil::Run(argv, env, 90);
  };
  // A screenshot: the SVG renders to a non-trivial PNG.
  const std::string png = dir / "flame.png";
  auto shot = browse({"--window-size=1200,240", "--screenshot=" + png}, "");
  REQUIRE_MESSAGE(shot.exit_code == 0, shot.err);
  const std::string image = testutil::ReadFileOrDie(png);
  CHECK(image.substr(1, 3) == "PNG");
  CHECK(image.size() > 5000);

  // The DOM after the page's script ran: named frames are there...
  auto dom = browse({"--dump-dom"}, "");
  REQUIRE(dom.exit_code == 0);
  for (const char* name : {"alpha", "beta", "gamma", "[nvtx] step", "kern"})
    CHECK_MESSAGE(dom.out.find(std::string("data-n=\"") + name + "\"") != std::string::npos, name);
  auto rect_width = [](const std::string& html, const std::string& name, std::string* cls = nullptr) {
    const std::regex g("<g ([^>]*)data-n=\"" + std::regex_replace(name, std::regex(R"([\[\]().*+?^$|\\])"), R"(\$&)") +
                       "\"([^>]*)>[\\s\\S]*?<rect [^>]*width=\"([0-9.]+)\"");
    std::smatch m;
    if (!std::regex_search(html, m, g)) return -1.0;
    if (cls) *cls = m[1].str() + m[2].str();
    return std::stod(m[3].str());
  };
  CHECK(rect_width(dom.out, "alpha") == doctest::Approx(kPlot * 70 / 120.01).epsilon(1e-2));

  // ...and a click on "alpha" (dispatched by the #zoom= hook) zooms: alpha
  // fills the width, beta scales with it, gamma is hidden.
  auto zoomed = browse({"--dump-dom"}, "#zoom=alpha");
  REQUIRE(zoomed.exit_code == 0);
  CHECK(zoomed.out.find("data-zoomed=\"alpha\"") != std::string::npos);
  CHECK(rect_width(zoomed.out, "alpha") == doctest::Approx(kPlot).epsilon(1e-3));
  CHECK(rect_width(zoomed.out, "beta") == doctest::Approx(kPlot * 20 / 70).epsilon(1e-3));
  std::string gamma_class;
  rect_width(zoomed.out, "gamma", &gamma_class);
  CHECK(gamma_class.find("hide") != std::string::npos);

  // Search: frames matching /^be/ are highlighted, their share shown.
  auto searched = browse({"--dump-dom"}, "#search=%5Ebe");
  REQUIRE(searched.exit_code == 0);
  CHECK(searched.out.find("Matched: 16.7%") != std::string::npos);  // beta: 20 of 120.01
  CHECK(searched.out.find("rgb(230,0,230)") != std::string::npos);
}

TEST_CASE("flame: hostile frame names are text in headless Chromium, never markup or script") {
  const std::string chromium = interop::FindProgram("chromium");
  if (chromium.empty()) {
    MESSAGE("SKIPPED: Chromium is not installed (Debian chromium; scripts/install-deps.sh installs it)");
    return;
  }
  // Each name tries another way out of where the SVG puts names: element
  // text, an attribute, a CDATA section, the script's data. A script that
  // got out would mark the document.
  const std::vector<std::string> hostile = {
      "</text><script>document.documentElement.setAttribute('data-pwned','text')</script>",
      "\"><script>document.documentElement.setAttribute('data-pwned','attr')</script><g x=\"",
      "]]></script><script>document.documentElement.setAttribute('data-pwned','cdata')</script>",
      "'});document.documentElement.setAttribute('data-pwned','js');({a:'",
      "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','img')\">",
  };
  cct::Tree t;
  const cct::MetricId s = *t.metrics().RegisterStandard("samples");
  const cct::NodeId main = t.InternChild(cct::kRootNode, t.InternFrame(FrameKind::kFunction, "main"));
  for (size_t i = 0; i < hostile.size(); ++i)
    t.AddValue(t.InternChild(main, t.InternFrame(FrameKind::kFunction, hostile[i])), s, 10.0 + static_cast<double>(i));
  testutil::TempDir dir;
  const std::string db = dir / "x.db";
  interop::StoreRun(db, t, "x");
  const std::string svg = dir / "x.svg";
  REQUIRE(interop::Query(db, {"flame", "latest", "-o", svg, "--title", hostile[0]}).exit_code == 0);
  const std::map<std::string, std::string> env = {{"HOME", dir.path()}};
  for (const std::string& fragment : {std::string(), std::string("#search=script")}) {
    std::vector<std::string> argv{chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                  "--user-data-dir=" + (dir / "profile"), "--dump-dom", "file://" + svg + fragment};
    auto dom = testutil::Run(argv, env, 90);
    REQUIRE_MESSAGE(dom.exit_code == 0, dom.err);
    CAPTURE(fragment);
    CHECK(dom.out.find("data-pwned=") == std::string::npos);
    // The page's own script ran (it names the frames) and the names are
    // there as text: main is drawn, so are its five hostile children.
    CHECK(dom.out.find("data-n=\"main\"") != std::string::npos);
    CHECK(dom.out.find("data-pwned") != std::string::npos);  // as escaped text of the names
  }
}
