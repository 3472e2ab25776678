// Flame graphs: the SVG is well-formed XML, frames have the widths the tree's
// values give, colours follow frame kinds (or, for a differential graph,
// cct-diff's verdicts, with gone frames drawn hatched), deep graphs hang as
// icicles, and in a real browser (headless Chromium) the graph takes the
// window's width, clicking zooms, "Reset zoom" restores, the search box
// reports the matched share, and screenshots show the colours drawn.
#include <doctest/doctest.h>
#include <expat.h>
#include <zlib.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "reports/flame.h"
#include "tests/interop_util.h"

namespace {

using cct::FrameKind;

struct SvgFrame {
  std::string name, kind, fill, title, cls;
  std::string status, verdict, step;  // differential graphs: data-s, data-v, data-step
  double x = 0, y = 0, w = 0, fx = 0, fw = 0;
  int depth = 0;
};

struct SvgDoc {
  std::map<std::string, std::string> root;  // the <svg> element's attributes
  std::vector<SvgFrame> frames;
  std::vector<std::map<std::string, std::string>> legend;  // the legend's swatches' attributes
  std::set<std::string> ids;                               // every id="..."
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
        if (a.count("id")) s.doc.ids.insert(a["id"]);
        if (tag == "rect" && a["class"].rfind("legend", 0) == 0) s.doc.legend.push_back(a);
        if (tag == "g" && a.count("class") && a["class"].substr(0, 1) == "f") {
          s.doc.frames.emplace_back();
          s.current = &s.doc.frames.back();
          s.current->cls = a["class"];
          s.current->status = a["data-s"];
          s.current->verdict = a["data-v"];
          s.current->step = a["data-step"];
          s.current->name = a["data-n"];
          s.current->kind = a["data-k"];
          s.current->depth = std::stoi(a["data-d"]);
          s.current->fx = std::stod(a["data-x"]);
          s.current->fw = std::stod(a["data-w"]);
        } else if (tag == "rect" && s.current) {
          s.current->x = std::stod(a["x"]);
          s.current->y = std::stod(a["y"]);
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

// A tree of "a;b;c" stacks of function frames, each with its exclusive
// samples.
cct::Tree StackTree(const std::vector<std::pair<std::string, double>>& stacks) {
  cct::Tree t;
  const cct::MetricId s = *t.metrics().RegisterStandard("samples");
  for (const auto& [path, value] : stacks) {
    std::vector<std::pair<FrameKind, std::string>> frames;
    std::stringstream in(path);
    for (std::string name; std::getline(in, name, ';');) frames.emplace_back(FrameKind::kFunction, name);
    t.AddValue(interop::AddPath(t, frames), s, value);
  }
  return t;
}

// A chain main;f1;...;f<below> of 1 sample each: root + main + `below`
// levels drawn.
cct::Tree ChainTree(int below) {
  std::string path = "main";
  std::vector<std::pair<std::string, double>> stacks{{path, 1}};
  for (int i = 1; i <= below; ++i) stacks.emplace_back(path += ";f" + std::to_string(i), 1);
  return StackTree(stacks);
}

testutil::RunResult CctDiff(const std::string& db, std::vector<std::string> args) {
  return interop::Tool("cct-diff", db, std::move(args), {{"NO_COLOR", ""}, {"COLUMNS", ""}, {"CCT_DB", ""}});
}

// Headless Chromium on an SVG file (the profile in `dir`), with a window of
// `width` x `height` pixels.
struct Browser {
  std::string chromium;
  const testutil::TempDir& dir;
  testutil::RunResult Run(const std::string& svg, int width, int height, const std::string& what,
                          const std::string& fragment = "") const {
    std::vector<std::string> argv{chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                  "--no-first-run", "--user-data-dir=" + (dir / "profile"),
                                  "--window-size=" + std::to_string(width) + "," + std::to_string(height), what,
                                  "file://" + svg + fragment};
    return testutil::Run(argv, {{"HOME", dir.path()}}, 90);
  }
};

// A frame's <rect> in a DOM dump: the attributes the page's script left.
struct DomRect {
  double x = -1, y = -1, w = -1;
  std::string fill, g;  // the fill, and the frame's <g> tag
};
DomRect FindDomRect(const std::string& html, const std::string& name) {
  DomRect r;
  const std::string key = "data-n=\"" + name + "\"";
  const size_t at = html.find(key);
  if (at == std::string::npos) return r;
  const size_t g = html.rfind("<g ", at);
  r.g = html.substr(g, html.find('>', at) - g + 1);
  const size_t rect = html.find("<rect ", at);
  const std::string tag = html.substr(rect, html.find('>', rect) - rect);
  auto attr = [&](const std::string& a) {
    std::smatch m;
    return std::regex_search(tag, m, std::regex(" " + a + "=\"([^\"]*)\"")) ? m[1].str() : std::string();
  };
  r.x = std::stod(attr("x"));
  r.y = std::stod(attr("y"));
  r.w = std::stod(attr("width"));
  r.fill = attr("fill");
  return r;
}

// A PNG as Chromium writes screenshots (8-bit RGB or RGBA, not interlaced),
// decoded with zlib.
struct Png {
  uint32_t width = 0, height = 0;
  size_t channels = 0;
  std::vector<uint8_t> pixels;  // rows of width * channels bytes
  std::string error;
  std::array<int, 3> At(double x, double y) const {
    const size_t i = (static_cast<size_t>(y) * width + static_cast<size_t>(x)) * channels;
    return {pixels[i], pixels[i + 1], pixels[i + 2]};
  }
};
Png DecodePng(const std::string& data) {
  Png png;
  auto be32 = [&](size_t at) {
    return (static_cast<uint32_t>(static_cast<uint8_t>(data[at])) << 24) |
           (static_cast<uint32_t>(static_cast<uint8_t>(data[at + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<uint8_t>(data[at + 2])) << 8) | static_cast<uint8_t>(data[at + 3]);
  };
  if (data.size() < 33 || data.compare(1, 3, "PNG") != 0) {
    png.error = "not a PNG";
    return png;
  }
  std::string idat;
  int depth = 0, type = 0, interlace = 0;
  for (size_t at = 8; at + 12 <= data.size();) {
    const uint32_t len = be32(at);
    const std::string kind = data.substr(at + 4, 4);
    if (kind == "IHDR") {
      png.width = be32(at + 8);
      png.height = be32(at + 12);
      depth = static_cast<uint8_t>(data[at + 16]);
      type = static_cast<uint8_t>(data[at + 17]);
      interlace = static_cast<uint8_t>(data[at + 20]);
    } else if (kind == "IDAT") {
      idat += data.substr(at + 8, len);
    }
    at += 12 + len;
  }
  if (depth != 8 || (type != 2 && type != 6) || interlace != 0) {
    png.error = "unsupported PNG (depth " + std::to_string(depth) + ", type " + std::to_string(type) + ")";
    return png;
  }
  png.channels = type == 6 ? 4 : 3;
  const size_t stride = png.width * png.channels;
  std::vector<uint8_t> raw((stride + 1) * png.height);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK ||
      raw_len != raw.size()) {
    png.error = "bad PNG data";
    return png;
  }
  png.pixels.assign(stride * png.height, 0);
  const size_t bpp = png.channels;
  for (size_t y = 0; y < png.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* row = &png.pixels[y * stride];
    const uint8_t* up = y > 0 ? &png.pixels[(y - 1) * stride] : nullptr;
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= bpp ? row[i - bpp] : 0, b = up ? up[i] : 0, c = up && i >= bpp ? up[i - bpp] : 0;
      int pred = 0;
      switch (filter) {
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: break;
      }
      row[i] = static_cast<uint8_t>(in[i] + pred);
    }
  }
  return png;
}

std::array<int, 3> Rgb(const std::string& fill) {
  int r = -1, g = -1, b = -1;
  std::sscanf(fill.c_str(), "rgb(%d,%d,%d)", &r, &g, &b);
  return {r, g, b};
}

// How many of the pixels along the frame's second row (above any label's
// glyphs), over the middle half of its width, have colour `want`.
double ShareOfRow(const Png& png, const DomRect& r, const std::array<int, 3>& want) {
  int hits = 0, all = 0;
  for (double x = r.x + r.w / 4; x < r.x + 3 * r.w / 4; x += 1, ++all) hits += png.At(x, r.y + 1) == want;
  return all > 0 ? static_cast<double>(hits) / all : 0;
}

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
  // The graph takes the window's width: 1200 px here, so the plot is kPlot.
  auto dom = browse({"--window-size=1200,600", "--dump-dom"}, "");
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
  auto zoomed = browse({"--window-size=1200,600", "--dump-dom"}, "#zoom=alpha");
  REQUIRE(zoomed.exit_code == 0);
  CHECK(zoomed.out.find("data-zoomed=\"alpha\"") != std::string::npos);
  CHECK(rect_width(zoomed.out, "alpha") == doctest::Approx(kPlot).epsilon(1e-3));
  CHECK(rect_width(zoomed.out, "beta") == doctest::Approx(kPlot * 20 / 70).epsilon(1e-3));
  std::string gamma_class;
  rect_width(zoomed.out, "gamma", &gamma_class);
  CHECK(gamma_class.find("hide") != std::string::npos);

  // Search: frames matching /^be/ are highlighted, their share shown.
  auto searched = browse({"--window-size=1200,600", "--dump-dom"}, "#search=%5Ebe");
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

namespace {

// Base and candidate of the differential tests. Base total 2870, so
// cct-diff's default --min-abs (1% of the base total) is 28.7 samples and
// its --threshold 5%:
//   steady 1000 -> 1005 (+0.5%) and wobble 1000 -> 992 (-0.8%): noise;
//   small 10 -> 15 (+50%, but +5 < 28.7): no verdict;
//   slow 200 -> 260 (+30%): regression, step 2 (+25%..+100%);
//   slower 100 -> 250 (+150%): regression, step 3 (beyond +100%);
//   faster 300 -> 270 (-10%): improvement, step 1 (-5%..-20%);
//   halved 200 -> 90 (-55%): improvement, step 3 (beyond -50%);
//   legacy;old_path 60 -> gone (an improvement of -100%);
//   main: 2870 -> 2882 (+0.4%): no verdict.
const std::vector<std::pair<std::string, double>> kBaseStacks = {
    {"main;steady", 1000}, {"main;wobble", 1000}, {"main;small", 10},          {"main;slow", 200},
    {"main;slower", 100},  {"main;faster", 300},  {"main;halved", 200},        {"main;legacy;old_path", 60}};
const std::vector<std::pair<std::string, double>> kCandStacks = {
    {"main;steady", 1005}, {"main;wobble", 992}, {"main;small", 15}, {"main;slow", 260},
    {"main;slower", 250},  {"main;faster", 270}, {"main;halved", 90}};

struct DiffGraph {
  testutil::TempDir dir;
  std::string db = dir / "d.db", svg = dir / "diff.svg";
  testutil::RunResult report;  // cct-diff --tree --format json, beside the graph
  DiffGraph(std::vector<std::string> extra = {}) {
    interop::StoreRun(db, StackTree(kBaseStacks), "before");
    interop::StoreRun(db, StackTree(kCandStacks), "after");
    std::vector<std::string> args{"before", "after", "--flame", svg, "--tree", "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    report = CctDiff(db, args);
  }
};

}  // namespace

TEST_CASE("flame: differential graph draws gone frames at their base width, hatched") {
  DiffGraph g;
  REQUIRE_MESSAGE(g.report.exit_code == 0, g.report.err);
  const std::string text = testutil::ReadFileOrDie(g.svg);
  const SvgDoc d = ParseSvg(text);
  REQUIRE_MESSAGE(d.error.empty(), d.error);
  CHECK(d.root.at("data-mode") == "diff");
  CHECK(d.ids.count("gone-hatch") == 1);  // the pattern gone frames are filled with
  // Drawn: the candidate's values plus the base's for what is gone.
  const double drawn = 1005 + 992 + 15 + 260 + 250 + 270 + 90 + 60;
  for (const char* name : {"legacy", "old_path"}) {
    CAPTURE(name);
    const SvgFrame* f = Find(d, name);
    REQUIRE(f != nullptr);
    CHECK(f->status == "gone");
    CHECK(f->cls.find("gone") != std::string::npos);
    CHECK(f->fill == "url(#gone-hatch)");
    CHECK(f->fw == doctest::Approx(60 / drawn));
    CHECK(f->w == doctest::Approx(kPlot * 60 / drawn).epsilon(1e-3));
    CHECK(f->title.find("60 -> 0") != std::string::npos);
  }
  CHECK(Find(d, "old_path")->depth == Find(d, "legacy")->depth + 1);
  // Their ancestors keep the room: main is the whole width.
  CHECK(Find(d, "main")->fw == doctest::Approx(1.0));
  CHECK(std::stod(d.root.at("data-total")) == doctest::Approx(drawn));
  // Frames in both keep the candidate's value.
  CHECK(Find(d, "slower")->fw == doctest::Approx(250 / drawn));
  CHECK(Find(d, "slower")->status == "both");
  // The legend names the hatch.
  bool legend_gone = false;
  for (const auto& l : d.legend) legend_gone |= l.at("fill") == "url(#gone-hatch)";
  CHECK(legend_gone);

  // A frame only the candidate has is outlined, coloured by its verdict.
  testutil::TempDir dir;
  interop::StoreRun(dir / "n.db", StackTree({{"main;a", 100}}), "before");
  interop::StoreRun(dir / "n.db", StackTree({{"main;a", 100}, {"main;fresh", 50}}), "after");
  REQUIRE(CctDiff(dir / "n.db", {"before", "after", "--flame", dir / "n.svg"}).exit_code == 0);
  const SvgDoc n = ParseSvg(testutil::ReadFileOrDie(dir / "n.svg"));
  REQUIRE(Find(n, "fresh") != nullptr);
  CHECK(Find(n, "fresh")->status == "new");
  CHECK(Find(n, "fresh")->cls.find("new") != std::string::npos);
  CHECK(Find(n, "fresh")->verdict == "regression");  // +50 against a 1 sample --min-abs
  CHECK(Find(n, "fresh")->step == "3");

  // The file is reviewed as a golden (tests/golden/diff_flame.svg).
  const std::string diff = testutil::CheckGolden("diff_flame.svg", text);
  CHECK_MESSAGE(diff.empty(), diff);
}

TEST_CASE("flame: differential colours are cct-diff's verdicts; the noise band stays neutral") {
  DiffGraph g;
  REQUIRE_MESSAGE(g.report.exit_code == 0, g.report.err);
  const SvgDoc d = ParseSvg(testutil::ReadFileOrDie(g.svg));
  REQUIRE_MESSAGE(d.error.empty(), d.error);
  // +0.5% and -0.8% are noise to cct-diff: one and the same untinted fill.
  REQUIRE(Find(d, "steady") != nullptr);
  REQUIRE(Find(d, "wobble") != nullptr);
  CHECK(Find(d, "steady")->fill == Find(d, "wobble")->fill);
  // The legend's swatches: the neutral one and one per verdict and step.
  std::map<std::string, std::string> legend;  // "regression/2" -> fill
  for (const auto& l : d.legend)
    if (l.count("data-v")) legend[l.at("data-v") + "/" + (l.count("data-step") ? l.at("data-step") : "")] = l.at("fill");
  REQUIRE(legend.count("/") == 1);
  const std::string neutral = legend.at("/");
  // Verdicts and steps from the construction (kBaseStacks).
  const std::map<std::string, std::pair<std::string, std::string>> expected = {
      {"main", {"", ""}},          {"steady", {"", ""}},           {"wobble", {"", ""}},
      {"small", {"", ""}},         {"slow", {"regression", "2"}}, {"slower", {"regression", "3"}},
      {"faster", {"improvement", "1"}}, {"halved", {"improvement", "3"}}};
  for (const auto& entry : expected) {
    const std::string& name = entry.first;  // not a structured binding: clang's lambdas (CAPTURE) cannot take one
    const auto& vs = entry.second;
    CAPTURE(name);
    const SvgFrame* f = Find(d, name);
    REQUIRE(f != nullptr);
    CHECK(f->verdict == vs.first);
    CHECK(f->step == vs.second);
    REQUIRE(legend.count(vs.first + "/" + vs.second) == 1);
    CHECK(f->fill == legend.at(vs.first + "/" + vs.second));
  }
  // Inside the noise band means neutral: no tint, whatever the small change.
  CHECK(Find(d, "steady")->fill == neutral);
  CHECK(Find(d, "wobble")->fill == neutral);
  CHECK(Find(d, "slow")->fill != neutral);
  CHECK(Find(d, "slow")->fill != Find(d, "slower")->fill);

  // Every frame's verdict is the one cct-diff reports for its node.
  const nlohmann::json tree = nlohmann::json::parse(g.report.out);
  std::map<std::string, std::string> reported;
  std::vector<const nlohmann::json*> todo{&tree};
  while (!todo.empty()) {
    const nlohmann::json& n = *todo.back();
    todo.pop_back();
    reported[n["name"].get<std::string>()] = n["verdicts"].value("samples", "");
    for (const auto& c : n["children"]) todo.push_back(&c);
  }
  size_t compared = 0;
  for (const SvgFrame& f : d.frames) {
    if (f.name == "all") continue;
    CAPTURE(f.name);
    REQUIRE(reported.count(f.name) == 1);
    CHECK(f.verdict == reported.at(f.name));
    ++compared;
  }
  CHECK(compared == 10);  // main, its 8 children, old_path

  // A stricter threshold moves slow (+30%) into the band: neutral.
  DiffGraph strict({"--threshold", "40"});
  REQUIRE(strict.report.exit_code == 0);
  const SvgDoc s = ParseSvg(testutil::ReadFileOrDie(strict.svg));
  CHECK(Find(s, "slow")->verdict == "");
  CHECK(Find(s, "slow")->fill == neutral);
  // The legend starts where the verdicts do: no step below +40%.
  for (const auto& l : s.legend)
    if (l.count("data-v") && l.at("data-v") == "regression") CHECK(l.at("data-step") != "1");
}

TEST_CASE("flame: deep graphs default to an icicle, --orientation chooses") {
  testutil::TempDir dir;
  const std::string db = dir / "o.db";
  // Root, main and kFirstScreenLevels - 2 more: exactly a first screen.
  interop::StoreRun(db, ChainTree(static_cast<int>(reports::kFirstScreenLevels) - 2), "fits");
  interop::StoreRun(db, ChainTree(static_cast<int>(reports::kFirstScreenLevels) - 1), "deeper");
  auto draw = [&](const std::string& run, std::vector<std::string> extra) {
    const std::string svg = dir / (run + ".svg");
    std::vector<std::string> args{"flame", run, "-o", svg};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = interop::Query(db, args);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return ParseSvg(testutil::ReadFileOrDie(svg));
  };
  auto root_on_top = [](const SvgDoc& d) {
    REQUIRE(Find(d, "all") != nullptr);
    REQUIRE(Find(d, "main") != nullptr);
    return Find(d, "all")->y < Find(d, "main")->y;
  };
  const SvgDoc fits = draw("fits", {}), deeper = draw("deeper", {});
  CHECK(fits.root.at("data-orientation") == "flame");
  CHECK(!root_on_top(fits));
  CHECK(deeper.root.at("data-orientation") == "icicle");
  CHECK(root_on_top(deeper));
  // The icicle's root and hot path start at the top of the first screen.
  CHECK(Find(deeper, "all")->y < 100);
  CHECK(Find(deeper, "main")->y == doctest::Approx(Find(deeper, "all")->y + 16));
  CHECK(!root_on_top(draw("deeper", {"--orientation", "flame"})));
  CHECK(root_on_top(draw("fits", {"--orientation", "icicle"})));
  auto bad = interop::Query(db, {"flame", "fits", "--orientation", "sideways", "-o", dir / "x.svg"});
  CHECK(bad.exit_code == 2);
  CHECK(testutil::LineCount(bad.err) == 1);
  CHECK(bad.err.find("--orientation") != std::string::npos);

  // cct-diff --flame takes it too.
  interop::StoreRun(db, ChainTree(60), "deep2");
  REQUIRE(CctDiff(db, {"deeper", "deep2", "--flame", dir / "d.svg"}).exit_code == 0);
  CHECK(ParseSvg(testutil::ReadFileOrDie(dir / "d.svg")).root.at("data-orientation") == "icicle");
  REQUIRE(CctDiff(db, {"deeper", "deep2", "--flame", dir / "d.svg", "--orientation", "flame"}).exit_code == 0);
  CHECK(ParseSvg(testutil::ReadFileOrDie(dir / "d.svg")).root.at("data-orientation") == "flame");
  auto alone = CctDiff(db, {"deeper", "deep2", "--orientation", "flame"});
  CHECK(alone.exit_code == 2);
  CHECK(testutil::LineCount(alone.err) == 1);
}

TEST_CASE("flame: in headless Chromium the graph follows the window, search reports the share, reset zoom restores") {
  const std::string chromium = interop::FindProgram("chromium");
  if (chromium.empty()) {
    MESSAGE("SKIPPED: Chromium is not installed (Debian chromium; scripts/install-deps.sh installs it)");
    return;
  }
  testutil::TempDir dir;
  const std::string db = dir / "w.db";
  // Total 80: work 70; needle 5 with needle2 5 below it, so /needle/ matches
  // 10 of 80 = 12.5% (nested matches count once, not 15 of 80).
  interop::StoreRun(db, StackTree({{"main;work", 70}, {"main;needle", 5}, {"main;needle;needle2", 5}}), "w");
  const std::string svg = dir / "w.svg";
  REQUIRE(interop::Query(db, {"flame", "w", "-o", svg}).exit_code == 0);
  const Browser b{chromium, dir};
  for (const int width : {640, 1500}) {
    CAPTURE(width);
    const double plot = width - 2 * 10;
    auto dom = b.Run(svg, width, 400, "--dump-dom");
    REQUIRE_MESSAGE(dom.exit_code == 0, dom.err);
    CHECK(dom.out.find("data-shown-width=\"" + std::to_string(width) + "\"") != std::string::npos);
    CHECK(FindDomRect(dom.out, "all").w == doctest::Approx(plot).epsilon(1e-3));
    CHECK(FindDomRect(dom.out, "work").w == doctest::Approx(plot * 70 / 80).epsilon(1e-3));

    // The search box is an input field in the page; the fragment types into it.
    CHECK(std::regex_search(dom.out, std::regex("<input [^>]*id=\"searchbox\"")));
    auto searched = b.Run(svg, width, 400, "--dump-dom", "#search=needle");
    REQUIRE(searched.exit_code == 0);
    CHECK(searched.out.find("Matched: 12.5%") != std::string::npos);
    CHECK(FindDomRect(searched.out, "needle2").fill == "rgb(230,0,230)");
    CHECK(FindDomRect(searched.out, "work").fill != "rgb(230,0,230)");

    auto zoomed = b.Run(svg, width, 400, "--dump-dom", "#zoom=needle");
    REQUIRE(zoomed.exit_code == 0);
    CHECK(FindDomRect(zoomed.out, "needle").w == doctest::Approx(plot).epsilon(1e-3));
    CHECK(FindDomRect(zoomed.out, "work").g.find("hide") != std::string::npos);
    auto reset = b.Run(svg, width, 400, "--dump-dom", "#zoom=needle&unzoom");
    REQUIRE(reset.exit_code == 0);
    CHECK(std::regex_search(zoomed.out, std::regex("<svg [^>]*data-zoomed=\"needle\"")));
    CHECK(!std::regex_search(reset.out, std::regex("<svg [^>]*data-zoomed")));
    CHECK(FindDomRect(reset.out, "needle").w == doctest::Approx(plot * 10 / 80).epsilon(1e-3));
    CHECK(FindDomRect(reset.out, "work").w == doctest::Approx(plot * 70 / 80).epsilon(1e-3));
    CHECK(FindDomRect(reset.out, "work").g.find("hide") == std::string::npos);
    CHECK(std::regex_search(reset.out, std::regex("id=\"unzoom\" class=\"[^\"]*hide")));
  }
}

TEST_CASE("flame: screenshots of the plain and differential graphs in headless Chromium") {
  const std::string chromium = interop::FindProgram("chromium");
  if (chromium.empty()) {
    MESSAGE("SKIPPED: Chromium is not installed (Debian chromium; scripts/install-deps.sh installs it)");
    return;
  }
  testutil::TempDir dir;
  const Browser b{chromium, dir};
  // Plain: the root frame ("all", grey 200) ends PAD before the window's
  // right edge at every width; beyond it is the background.
  const std::string db = dir / "f.db";
  interop::StoreRun(db, FlameFixture(), "flame");
  const std::string svg = dir / "f.svg";
  REQUIRE(interop::Query(db, {"flame", "latest", "-o", svg}).exit_code == 0);
  for (const int width : {700, 1300}) {
    CAPTURE(width);
    const std::string png_path = dir / ("f" + std::to_string(width) + ".png");
    auto shot = b.Run(svg, width, 300, "--screenshot=" + png_path);
    REQUIRE_MESSAGE(shot.exit_code == 0, shot.err);
    const Png png = DecodePng(testutil::ReadFileOrDie(png_path));
    REQUIRE_MESSAGE(png.error.empty(), png.error);
    CHECK(png.width == static_cast<uint32_t>(width));
    auto dom = b.Run(svg, width, 300, "--dump-dom");
    const DomRect all = FindDomRect(dom.out, "all");
    REQUIRE(all.w > 0);
    CHECK(all.x + all.w == doctest::Approx(width - 10).epsilon(1e-3));
    CHECK(ShareOfRow(png, all, {200, 200, 200}) > 0.9);
    CHECK(png.At(width - 4, all.y + 1) == std::array<int, 3>{248, 248, 240});
    CHECK(png.At(all.x + all.w - 4, all.y + 1) == std::array<int, 3>{200, 200, 200});
  }

  // Differential: the gone frame is striped (both of the hatch's colours
  // show along it), a noise-band frame is the flat neutral grey, a
  // regression and an improvement their legend colours.
  DiffGraph g;
  REQUIRE_MESSAGE(g.report.exit_code == 0, g.report.err);
  const SvgDoc d = ParseSvg(testutil::ReadFileOrDie(g.svg));
  const std::string png_path = dir / "diff.png";
  auto shot = b.Run(g.svg, 1100, 300, "--screenshot=" + png_path);
  REQUIRE_MESSAGE(shot.exit_code == 0, shot.err);
  const Png png = DecodePng(testutil::ReadFileOrDie(png_path));
  REQUIRE_MESSAGE(png.error.empty(), png.error);
  CHECK(png.width == 1100u);
  auto dom = b.Run(g.svg, 1100, 300, "--dump-dom");
  REQUIRE(dom.exit_code == 0);
  for (const char* name : {"steady", "slower", "halved"}) {
    CAPTURE(name);
    const DomRect r = FindDomRect(dom.out, name);
    REQUIRE(r.w > 0);
    CHECK(r.fill == Find(d, name)->fill);
    CHECK(ShareOfRow(png, r, Rgb(r.fill)) > 0.9);
  }
  CHECK(Find(d, "steady")->verdict == "");
  const DomRect gone = FindDomRect(dom.out, "legacy");
  REQUIRE(gone.w > 0);
  CHECK(gone.fill == "url(#gone-hatch)");
  int light = 0, dark = 0;
  for (double x = gone.x + 3; x < gone.x + gone.w - 3; x += 1) {
    for (const double y : {gone.y + 4, gone.y + 8}) {
      const std::array<int, 3> p = png.At(x, y);
      light += std::abs(p[0] - 236) + std::abs(p[1] - 238) + std::abs(p[2] - 248) < 30;
      dark += std::abs(p[0] - 90) + std::abs(p[1] - 110) + std::abs(p[2] - 190) < 60;
    }
  }
  CHECK(light > 4);
  CHECK(dark > 4);
}
