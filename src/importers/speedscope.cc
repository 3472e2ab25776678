// --from speedscope: speedscope's JSON file format
// (https://www.speedscope.app/file-format-schema.json, written by py-spy,
// rbspy, speedscope itself and our --to speedscope): shared.frames (name,
// file, line, col) and profiles of type "sampled" (samples: stacks of frame
// indices, root first, with weights) or "evented" (open/close events with
// "at" times; a frame's self time is the time it is on top of the stack).
//
// Each profile becomes a thread node named after the profile. Frames are
// function frames with the file and line they state (col is dropped). The
// profile's unit picks the metric: time units -> "time" in ns, bytes ->
// "bytes", none -> "samples"; --metric renames it.
//
// Read with nlohmann's SAX parser as the bytes arrive: memory is the tree
// being built (stacks are interned into a trie of frame indices as they are
// read) plus one profile's weights, never a DOM of the file. Producers write
// "profiles" before "shared" (py-spy, rbspy), so frames are resolved at the
// end.

#include <cmath>
#include <cstring>
#include <istream>
#include <nlohmann/json.hpp>

#include "cct/flat_index.h"
#include "cct/metric.h"
#include "cct/text.h"
#include "importers/importer.h"

namespace importers {

using cct::Result;
using cct::Status;

namespace {

constexpr uint32_t kNoTrie = UINT32_MAX;

// One profile's fields, as they arrive (in any key order).
struct SsProfile {
  std::string type, name, unit;
  bool has_samples = false, has_events = false;
  std::vector<uint32_t> sample_leaf;  // per sample: its trie node (kNoTrie: skipped)
  std::vector<double> weights;
  // evented: the open stack (trie nodes) and the last event's time
  std::vector<uint32_t> open;
  double last_at = 0;
  bool any_event = false;
};

// What the SAX handler is inside.
enum class SsCtx : uint8_t {
  kTop, kDoc, kShared, kFrames, kFrame, kProfiles, kProfile, kSamples, kSample, kWeights, kEvents, kEvent, kSkip
};

class SpeedscopeSax {
 public:
  using json = nlohmann::json;
  SpeedscopeSax(std::string path, const ImportOptions& options) : path_(std::move(path)), options_(options) {}

  // --- the trie of stacks: node = (parent, frame index); roots are the
  // profiles' (parent kNoTrie, frame = profile index).
  std::vector<std::pair<uint32_t, uint32_t>> trie;
  std::vector<double> self;  // per trie node, in the profile's unit
  std::vector<uint32_t> trie_profile;
  cct::FlatIndex trie_index;  // keys in `trie`: 8 bytes a slot, not a node-based map's 40+
  struct Frame {
    std::string name, file;
    uint32_t line = 0;
  };
  std::vector<Frame> frames;
  struct Done {
    std::string name, unit;
    uint32_t root;
  };
  std::vector<Done> profiles;
  bool saw_profiles = false, saw_shared = false;
  uint32_t max_frame = 0;
  bool any_frame_ref = false;
  size_t records = 0, skipped = 0;
  std::string first_skip;
  Status error = Status::Ok();

  uint32_t Child(uint32_t parent, uint32_t frame) {
    const uint64_t hash = cct::HashCombine(cct::MixHash(parent), frame);
    uint32_t id = trie_index.Find(hash, [&](uint32_t i) { return trie[i].first == parent && trie[i].second == frame; });
    if (id == cct::FlatIndex::kNone) {
      id = static_cast<uint32_t>(trie.size());
      trie.push_back({parent, frame});
      self.push_back(0);
      trie_profile.push_back(static_cast<uint32_t>(profiles.size()));
      trie_index.Insert(hash, id);
    }
    return id;
  }

  // --- SAX
  bool null() { return Scalar(json()); }
  bool boolean(bool v) { return Scalar(json(v)); }
  bool number_integer(json::number_integer_t v) { return Number(static_cast<double>(v), v >= 0, v); }
  bool number_unsigned(json::number_unsigned_t v) {
    return Number(static_cast<double>(v), true, v > INT64_MAX ? INT64_MAX : static_cast<int64_t>(v));
  }
  bool number_float(json::number_float_t v, const std::string&) { return Number(v, false, 0); }
  bool string(std::string& v) { return Scalar(json(std::move(v))); }
  bool binary(json::binary_t&) { return Fail("unexpected binary value"); }
  bool key(std::string& k) {
    key_ = std::move(k);
    return true;
  }
  bool start_object(size_t) { return Open(true); }
  bool end_object() { return Close(); }
  bool start_array(size_t) { return Open(false); }
  bool end_array() { return Close(); }
  bool parse_error(size_t pos, const std::string&, const nlohmann::detail::exception& e) {
    error = JsonSyntaxError(path_, pos, e.what());
    return false;
  }

 private:
  bool Fail(const std::string& why) {
    if (error.ok()) error = cct::BadInput(path_ + ": " + why);
    return false;
  }
  SsCtx Top() const { return ctx_.empty() ? SsCtx::kTop : ctx_.back(); }
  std::string ProfileWhere() const { return "profiles[" + std::to_string(profiles.size()) + "]"; }

  bool Open(bool object) {
    SsCtx next = SsCtx::kSkip;
    switch (Top()) {
      case SsCtx::kTop:
        if (!object) return Fail("not a speedscope file (the document is a list, not an object)");
        next = SsCtx::kDoc;
        break;
      case SsCtx::kDoc:
        if (key_ == "shared") next = object ? SsCtx::kShared : SsCtx::kSkip, saw_shared = true;
        else if (key_ == "profiles") {
          if (object) return Fail("\"profiles\" is not a list");
          next = SsCtx::kProfiles, saw_profiles = true;
        }
        break;
      case SsCtx::kShared:
        if (key_ == "frames") {
          if (object) return Fail("\"shared.frames\" is not a list");
          next = SsCtx::kFrames;
        }
        break;
      case SsCtx::kFrames:
        if (!object) return Fail("shared.frames[" + std::to_string(frames.size()) + "] is not an object");
        frames.emplace_back();
        frame_has_name_ = false;
        next = SsCtx::kFrame;
        break;
      case SsCtx::kProfiles:
        if (!object) return Fail(ProfileWhere() + " is not an object");
        cur_ = SsProfile{};
        cur_root_ = Child(kNoTrie, static_cast<uint32_t>(profiles.size()));
        next = SsCtx::kProfile;
        break;
      case SsCtx::kProfile:
        if (key_ == "samples") {
          if (object) return Fail(ProfileWhere() + ".samples is not a list");
          cur_.has_samples = true;
          next = SsCtx::kSamples;
        } else if (key_ == "weights") {
          if (object) return Fail(ProfileWhere() + ".weights is not a list");
          next = SsCtx::kWeights;
        } else if (key_ == "events") {
          if (object) return Fail(ProfileWhere() + ".events is not a list");
          cur_.has_events = true;
          next = SsCtx::kEvents;
        }
        break;
      case SsCtx::kSamples:
        if (object) return Fail(ProfileWhere() + ".samples[" + std::to_string(cur_.sample_leaf.size()) +
                                "] is not a list of frame indices");
        sample_node_ = cur_root_;
        sample_bad_.clear();
        next = SsCtx::kSample;
        break;
      case SsCtx::kEvents:
        if (!object)
          return Fail(ProfileWhere() + ".events[" + std::to_string(event_no_) + "] is not an object");
        ev_type_.clear();
        ev_at_.reset();
        ev_frame_.reset();
        next = SsCtx::kEvent;
        break;
      default:
        // Nested values where the format has scalars, or fields we do not
        // read: skipped whole (kSkip nests).
        if (Top() == SsCtx::kSample) return Fail(SampleWhere() + " holds a nested value, not a frame index");
        if (Top() == SsCtx::kWeights) return Fail(ProfileWhere() + ".weights holds a nested value");
        next = SsCtx::kSkip;
        break;
    }
    ctx_.push_back(next);
    return true;
  }

  std::string SampleWhere() const {
    return ProfileWhere() + ".samples[" + std::to_string(cur_.sample_leaf.size()) + "]";
  }

  bool Close() {
    if (ctx_.empty()) return Fail("unbalanced JSON");
    const SsCtx c = ctx_.back();
    ctx_.pop_back();
    switch (c) {
      case SsCtx::kDoc:
        return true;
      case SsCtx::kFrame:
        if (!frame_has_name_) return Fail("shared.frames[" + std::to_string(frames.size() - 1) + "] has no \"name\"");
        return true;
      case SsCtx::kSample:
        if (!sample_bad_.empty()) {
          if (!options_.skip_bad_lines) return Fail(SampleWhere() + ": " + sample_bad_);
          if (skipped++ == 0) first_skip = SampleWhere() + ": " + sample_bad_;
          cur_.sample_leaf.push_back(kNoTrie);
        } else {
          cur_.sample_leaf.push_back(sample_node_);
        }
        ++records;
        return true;
      case SsCtx::kEvent:
        return Event();
      case SsCtx::kEvents:
        event_no_ = 0;
        return true;
      case SsCtx::kProfile:
        return EndProfile();
      default:
        return true;
    }
  }

  bool Number(double v, bool non_negative_int, int64_t iv) {
    switch (Top()) {
      case SsCtx::kSample:
        if (!non_negative_int || iv > UINT32_MAX - 1) {
          if (sample_bad_.empty()) sample_bad_ = "a frame index is not a non-negative integer";
          return true;
        }
        NoteFrame(static_cast<uint32_t>(iv));
        sample_node_ = Child(sample_node_, static_cast<uint32_t>(iv));
        return true;
      case SsCtx::kWeights:
        if (!std::isfinite(v)) return Fail(ProfileWhere() + ".weights[" + std::to_string(cur_.weights.size()) +
                                           "] is not a finite number");
        cur_.weights.push_back(v);
        return true;
      case SsCtx::kEvent:
        if (key_ == "at") ev_at_ = v;
        else if (key_ == "frame") {
          if (!non_negative_int || iv > UINT32_MAX - 1)
            return Fail(ProfileWhere() + ".events[" + std::to_string(event_no_) +
                        "].frame is not a non-negative integer");
          ev_frame_ = static_cast<uint32_t>(iv);
        }
        return true;
      case SsCtx::kFrame:
        if (key_ == "line" && non_negative_int && iv <= UINT32_MAX) frames.back().line = static_cast<uint32_t>(iv);
        return true;
      default:
        return Scalar(json(v));
    }
  }

  bool Scalar(const json& v) {
    switch (Top()) {
      case SsCtx::kTop:
        return Fail("not a speedscope file (the document is not an object)");
      case SsCtx::kFrame:
        if (key_ == "name") {
          if (!v.is_string()) return Fail("shared.frames[" + std::to_string(frames.size() - 1) + "].name is not a string");
          frames.back().name = v.get<std::string>();
          frame_has_name_ = true;
        } else if (key_ == "file" && v.is_string()) {
          frames.back().file = v.get<std::string>();
        }
        return true;
      case SsCtx::kProfile:
        if (key_ == "type" || key_ == "name" || key_ == "unit") {
          if (!v.is_string()) return Fail(ProfileWhere() + "." + key_ + " is not a string");
          (key_ == "type" ? cur_.type : key_ == "name" ? cur_.name : cur_.unit) = v.get<std::string>();
        }
        return true;
      case SsCtx::kSample:
        if (sample_bad_.empty()) sample_bad_ = "a frame index is not a number";
        return true;
      case SsCtx::kWeights:
        return Fail(ProfileWhere() + ".weights[" + std::to_string(cur_.weights.size()) + "] is not a number");
      case SsCtx::kEvent:
        if (key_ == "type" && v.is_string()) ev_type_ = v.get<std::string>();
        return true;
      case SsCtx::kSamples:
        return Fail(SampleWhere() + " is not a list of frame indices");
      case SsCtx::kEvents:
        return Fail(ProfileWhere() + ".events[" + std::to_string(event_no_) + "] is not an object");
      case SsCtx::kProfiles:
        return Fail(ProfileWhere() + " is not an object");
      case SsCtx::kFrames:
        return Fail("shared.frames[" + std::to_string(frames.size()) + "] is not an object");
      default:
        return true;
    }
  }

  void NoteFrame(uint32_t f) {
    any_frame_ref = true;
    max_frame = std::max(max_frame, f);
  }

  bool Event() {
    const std::string where = ProfileWhere() + ".events[" + std::to_string(event_no_++) + "]";
    if (ev_type_ != "O" && ev_type_ != "C") return Fail(where + ".type is not \"O\" or \"C\"");
    if (!ev_at_ || !std::isfinite(*ev_at_)) return Fail(where + " has no numeric \"at\"");
    if (!ev_frame_) return Fail(where + " has no \"frame\"");
    if (cur_.any_event && *ev_at_ < cur_.last_at)
      return Fail(where + ": \"at\" " + nlohmann::json(*ev_at_).dump() + " is before the previous event's " +
                  nlohmann::json(cur_.last_at).dump());
    // The time since the previous event was spent in the frame on top.
    if (!cur_.open.empty()) self[cur_.open.back()] += *ev_at_ - cur_.last_at;
    cur_.last_at = *ev_at_;
    cur_.any_event = true;
    NoteFrame(*ev_frame_);
    ++records;
    if (ev_type_ == "O") {
      cur_.open.push_back(Child(cur_.open.empty() ? cur_root_ : cur_.open.back(), *ev_frame_));
    } else {
      if (cur_.open.empty()) return Fail(where + ": closes frame " + std::to_string(*ev_frame_) + " but none is open");
      const uint32_t top_frame = trie[cur_.open.back()].second;
      if (top_frame != *ev_frame_)
        return Fail(where + ": closes frame " + std::to_string(*ev_frame_) + " but frame " +
                    std::to_string(top_frame) + " is the innermost open one");
      cur_.open.pop_back();
    }
    return true;
  }

  bool EndProfile() {
    const std::string where = ProfileWhere();
    if (cur_.type != "sampled" && cur_.type != "evented")
      return Fail(where + ".type is " + (cur_.type.empty() ? std::string("missing") : cct::ElideMiddle(json(cur_.type).dump(), 40)) +
                  " (expected \"sampled\" or \"evented\")");
    if (cur_.type == "sampled") {
      if (!cur_.has_samples) return Fail(where + " (sampled) has no \"samples\"");
      if (cur_.weights.size() != cur_.sample_leaf.size())
        return Fail(where + " has " + std::to_string(cur_.sample_leaf.size()) + " samples but " +
                    std::to_string(cur_.weights.size()) + " weights");
      for (size_t i = 0; i < cur_.sample_leaf.size(); ++i)
        if (cur_.sample_leaf[i] != kNoTrie) self[cur_.sample_leaf[i]] += cur_.weights[i];
    } else {
      if (!cur_.has_events) return Fail(where + " (evented) has no \"events\"");
      if (!cur_.open.empty())
        return Fail(where + ": " + std::to_string(cur_.open.size()) + " frame(s) still open after the last event");
    }
    profiles.push_back({cur_.name, cur_.unit, cur_root_});
    cur_ = SsProfile{};
    return true;
  }

  std::string path_;
  const ImportOptions& options_;
  std::vector<SsCtx> ctx_;
  std::string key_;
  bool frame_has_name_ = false;
  SsProfile cur_;
  uint32_t cur_root_ = 0;
  uint32_t sample_node_ = 0;
  std::string sample_bad_;
  size_t event_no_ = 0;
  std::string ev_type_;
  std::optional<double> ev_at_;
  std::optional<uint32_t> ev_frame_;
};

// speedscope's units: our metric's name, unit and the factor to it.
struct SsUnit {
  const char* name;
  const char* metric;
  cct::Unit unit;
  double scale;
};
constexpr SsUnit kSsUnits[] = {
    {"nanoseconds", "time", cct::Unit::kNanoseconds, 1},  {"microseconds", "time", cct::Unit::kNanoseconds, 1e3},
    {"milliseconds", "time", cct::Unit::kNanoseconds, 1e6}, {"seconds", "time", cct::Unit::kNanoseconds, 1e9},
    {"bytes", "bytes", cct::Unit::kBytes, 1},             {"none", "samples", cct::Unit::kCount, 1},
};

}  // namespace

Result<ImportResult> ImportSpeedscope(const std::string& path, const ImportOptions& options) {
  CCT_ASSIGN_OR_RETURN(auto buf, InputFileBuf::Open(path, PieceLimit{PieceKind::kJsonTokens, kMaxLineBytes}));
  SpeedscopeSax sax(path, options);
  std::istream in(buf.get());
  bool parsed = false;
  try {
    parsed = nlohmann::json::sax_parse(in, &sax);
  } catch (const std::exception& e) {  // nlohmann on input it cannot adapt; never expected
    return cct::BadInput(path + ": " + cct::ElideMiddle(e.what(), 200, true));
  }
  CCT_RETURN_IF_ERROR(buf->status());
  if (!sax.error.ok()) return sax.error;
  if (!parsed) return cct::BadInput(path + ": not valid JSON");
  if (!sax.saw_profiles || !sax.saw_shared)
    return cct::BadInput(path + ": not a speedscope file (no \"" + (sax.saw_profiles ? "shared" : "profiles") +
                         "\" member)");
  if (sax.profiles.empty()) return cct::BadInput(path + ": no profiles");
  if (sax.any_frame_ref && sax.max_frame >= sax.frames.size())
    return cct::BadInput(path + ": a stack names frame " + std::to_string(sax.max_frame) + " but shared.frames has " +
                         std::to_string(sax.frames.size()));

  ImportResult result;
  result.records = sax.records;
  result.skipped = sax.skipped;
  result.first_skip = sax.first_skip;
  cct::Tree& tree = result.tree;
  // One metric per unit the profiles use (one, normally).
  std::vector<std::pair<cct::MetricId, double>> by_profile;
  std::vector<std::string> units;
  for (const auto& p : sax.profiles)
    if (std::find(units.begin(), units.end(), p.unit) == units.end()) units.push_back(p.unit);
  if (!options.metric.empty() && units.size() > 1)
    return cct::InvalidArgument("--metric names one metric, but the profiles of " + path + " use " +
                                std::to_string(units.size()) + " units");
  for (size_t i = 0; i < sax.profiles.size(); ++i) {
    const std::string& u = sax.profiles[i].unit;
    const SsUnit* su = nullptr;
    for (const SsUnit& s : kSsUnits)
      if (u == s.name) su = &s;
    if (!su)
      return cct::BadInput(path + ": profiles[" + std::to_string(i) + "].unit is " + cct::ElideMiddle(nlohmann::json(u).dump(), 40) +
                           " (expected nanoseconds, microseconds, milliseconds, seconds, bytes or none)");
    cct::MetricDesc d;
    d.name = options.metric.empty() ? su->metric : options.metric;
    d.unit = su->unit;
    d.description = "imported from speedscope";
    if (const cct::MetricDesc* known = cct::FindStandardMetric(d.name)) {
      if (known->unit != d.unit)
        return cct::InvalidArgument("metric '" + d.name + "' is measured in " + std::string(cct::UnitName(known->unit)) +
                                    ", but " + path + "'s profile is in " + u);
      if (known->kind == cct::MetricKind::kAdditive) d.description = known->description;
    }
    CCT_ASSIGN_OR_RETURN(cct::MetricId id, tree.metrics().Register(d));
    by_profile.push_back({id, su->scale});
  }
  // Trie nodes -> ours (parents first: a trie node's parent was made before it).
  std::vector<cct::FrameId> frame_ids(sax.frames.size(), 0);
  std::vector<uint8_t> frame_made(sax.frames.size(), 0);
  std::vector<cct::NodeId> ours(sax.trie.size(), cct::kRootNode);
  for (size_t t = 0; t < sax.trie.size(); ++t) {
    const auto [parent, f] = sax.trie[t];
    if (parent == kNoTrie) {
      std::string name = f < sax.profiles.size() ? sax.profiles[f].name : std::string();
      if (name.empty()) name = "profile " + std::to_string(f);
      ours[t] = tree.InternChild(cct::kRootNode, tree.InternFrame(cct::FrameKind::kThread, name));
      continue;
    }
    if (!frame_made[f]) {
      const SpeedscopeSax::Frame& fr = sax.frames[f];
      frame_ids[f] = tree.InternFrame(cct::FrameKind::kFunction, fr.name.empty() ? "(unnamed)" : fr.name, {},
                                      fr.file, fr.line);
      frame_made[f] = 1;
    }
    ours[t] = tree.InternChild(ours[parent], frame_ids[f]);
  }
  for (size_t t = 0; t < sax.trie.size(); ++t) {
    if (sax.self[t] == 0) continue;
    const uint32_t p = sax.trie_profile[t];
    if (p >= by_profile.size()) continue;  // a profile cut short by an error: not reached
    tree.AddValue(ours[t], by_profile[p].first, sax.self[t] * by_profile[p].second);
  }
  return result;
}

Result<ImportReport> ImportSpeedscopeRun(const ImportRequest& request) {
  CCT_RETURN_IF_ERROR(RejectOptions(request, {"unit"}, "speedscope"));
  return ImportNewRun(request, "speedscope", &ImportSpeedscope);
}

}  // namespace importers
