// ReplayRawDump (collector/gpu/gpu_raw_dump.h): rebuilds a run from a raw GPU
// dump with the collector's own pieces — one ActivityDecoder for every
// buffer, one GpuAttributor against the dump's correlations, one
// GpuMetricWriter onto the last snapshot's tree, and the node-making
// functions of gpu_nodes.h. Reads CUPTI's structs; calls no CUPTI function.
#include <cupti_activity.h>
#include <cupti_version.h>

#include <cstddef>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "collector/gpu/cupti/cupti_decode.h"
#include "collector/gpu/gpu_metrics.h"
#include "collector/gpu/gpu_nodes.h"
#include "collector/gpu/gpu_raw_dump.h"
#include "store/run_meta.h"
#include "store/iteration_codec.h"
#include "store/tree_codec.h"

namespace collector {
namespace {

// Correlation id → launch site for a replay: CUPTI's ids are consecutive,
// so a vector indexed from the smallest id is one load per record; ids
// spread too thinly for that fall back to a map.
class DenseLaunchSites final : public LaunchSiteLookup {
 public:
  explicit DenseLaunchSites(const std::vector<RawCorrelation>& correlations) {
    if (correlations.empty()) return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const RawCorrelation& c : correlations) {
      lo = std::min<uint64_t>(lo, c.correlation_id);
      hi = std::max<uint64_t>(hi, c.correlation_id);
    }
    if (hi - lo + 1 <= 4 * correlations.size() + 1024) {
      base_ = lo;
      dense_.resize(hi - lo + 1);
    }
  }
  void Set(uint32_t correlation_id, LaunchSite site) {
    if (!dense_.empty()) dense_[correlation_id - base_] = {site, true};
    else map_[correlation_id] = site;
  }
  bool Find(uint64_t correlation_id, LaunchSite* out) const override {
    if (dense_.empty()) return map_.Find(correlation_id, out);
    if (correlation_id < base_ || correlation_id - base_ >= dense_.size() || !dense_[correlation_id - base_].known)
      return false;
    *out = dense_[correlation_id - base_].site;
    return true;
  }

 private:
  struct Slot {
    LaunchSite site;
    bool known = false;
  };
  uint64_t base_ = 0;
  std::vector<Slot> dense_;
  LaunchSites map_;
};

// The attributor's handle for "launch never known": the `<gpu unknown>`
// node, made when first needed. Other handles are the tree's node ids.
constexpr uint32_t kUnknownHandle = 0xFFFFFFFEu;

struct Event {
  RawRecordType type;
  size_t index;  // into batches or pc_records
};

// Puts the dump's kernel names where the buffer's kernel records keep a
// pointer to their name (meaningless outside the recording process; never
// dereferenced here). Walks the records as ActivityDecoder::DecodeBuffer
// does (WalkRecords). Returns how many kernel records got no name.
uint64_t PatchKernelNames(uint8_t* buffer, size_t bytes, const RawBatch& batch, const RawNameTable& names,
                          uint64_t* mismatched) {
  uint64_t unnamed = 0;
  size_t k = 0;
  cupti::WalkRecords(buffer, bytes, [&](size_t offset, CUpti_ActivityKind kind) {
    if (kind != CUPTI_ACTIVITY_KIND_KERNEL && kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) return;
    const char* name = nullptr;
    if (k < batch.kernel_names.size() && batch.kernel_names[k] != 0)
      name = names[batch.kernel_names[k] - 1].c_str();
    else
      ++unnamed;
    ++k;
    std::memcpy(buffer + offset + offsetof(CUpti_ActivityKernel10, name), &name, sizeof name);
  });
  if (k != batch.kernel_names.size()) ++*mismatched;
  return unnamed;
}

}  // namespace

cct::Result<RawReplay> ReplayRawDump(const std::string& path) {
  try {
    auto opened = RawDumpReader::Open(path);
    if (!opened.ok()) return opened.status();
    RawDumpReader& reader = **opened;

    // Pass 1: every record, in file order.
    std::vector<RawCorrelation> correlations;
    RawNameTable names;
    std::vector<RawBatch> batches;
    std::vector<std::string_view> pc_records;
    std::vector<Event> events;
    std::string_view last_snapshot;
    uint64_t snapshots = 0;
    RawRecord record;
    for (;;) {
      auto more = reader.Next(&record);
      if (!more.ok()) return more.status();
      if (!*more) break;
      const auto at = [&](const cct::Status& s) {
        return cct::Corrupt(path + ": damaged raw GPU dump (record at offset " + std::to_string(record.offset) +
                            "): " + s.message());
      };
      switch (static_cast<RawRecordType>(record.type)) {
        case RawRecordType::kCorrelations:
          if (cct::Status s = ParseRawCorrelations(record.payload, reader.format_version(), &correlations); !s.ok())
            return at(s);
          break;
        case RawRecordType::kBatch: {
          RawBatch b;
          if (cct::Status s = ParseRawBatch(record.payload, names, &b); !s.ok()) return at(s);
          events.push_back({RawRecordType::kBatch, batches.size()});
          batches.push_back(std::move(b));
          break;
        }
        case RawRecordType::kPcSamples:
          events.push_back({RawRecordType::kPcSamples, pc_records.size()});
          pc_records.push_back(record.payload);
          break;
        case RawRecordType::kSnapshot:
          last_snapshot = record.payload;
          ++snapshots;
          break;
        case RawRecordType::kHeader:
          return at(cct::Corrupt("a second header record"));
        default:
          break;  // a record type of a later revision of format 1: skipped
      }
    }

    // The tree and metadata of the last snapshot (none: a process that
    // died before its first checkpoint; its activity goes to unknown).
    RawReplay out;
    out.truncated = reader.truncated();
    out.snapshots = snapshots;
    nlohmann::json meta;
    std::unordered_map<uint32_t, cct::NodeId> site_nodes;
    if (snapshots > 0) {
      RawSnapshot snap;
      if (cct::Status s = ParseRawSnapshot(last_snapshot, &snap); !s.ok())
        return cct::Corrupt(path + ": damaged raw GPU dump (last snapshot): " + s.message());
      auto tree = store::DecodeTree(snap.sections);
      if (!tree.ok())
        return cct::Corrupt(path + ": damaged raw GPU dump (last snapshot's tree): " + tree.status().message());
      out.tree = std::move(*tree);
      for (const store::Section& its : snap.sections) {
        if (its.kind != store::SectionKind::kIterations) continue;
        auto decoded = store::DecodeIterations(its.payload, out.tree.size(), out.tree.metrics());
        if (!decoded.ok())
          return cct::Corrupt(path + ": damaged raw GPU dump (last snapshot's iterations): " +
                              decoded.status().message());
        out.iterations = std::move(*decoded);
      }
      meta = nlohmann::json::parse(snap.meta_json, nullptr, /*allow_exceptions=*/false);
      if (!meta.is_object())
        return cct::Corrupt(path + ": damaged raw GPU dump (last snapshot's run metadata is not a JSON object)");
      for (const RawSiteNode& s : snap.sites)
        if (s.node < out.tree.size()) site_nodes[s.handle] = s.node;
    } else {
      store::RunMeta m;
      m.pid = reader.pid();
      meta = m.ToJson();
    }
    cct::Tree& tree = out.tree;

    // Correlations: id → the node of its launch site; a handle without a
    // node in the snapshot (a lost launch site, or a launch after the last
    // checkpoint) attributes to `<gpu unknown>`, as the runtime's handle 0 does.
    DenseLaunchSites sites(correlations);
    uint64_t without_node = 0;
    for (const RawCorrelation& c : correlations) {
      LaunchSite site;
      site.kind = static_cast<cct::GpuOpKind>(c.kind);
      // Only iterations the snapshot holds get GPU values; a launch in an
      // iteration that ended after it (or a damaged index) counts in the
      // run's totals only, as in the run the collector stored.
      site.iteration = c.iteration < out.iterations.iterations.size() ? c.iteration : kNoIteration;
      if (auto it = site_nodes.find(c.handle); it != site_nodes.end()) {
        site.node = it->second;
      } else {
        site.node = kUnknownHandle;
        ++without_node;
      }
      sites.Set(c.correlation_id, site);
    }

    cct::NodeId unknown = cct::kNoNode;
    const auto node_of = [&](uint32_t handle) -> cct::NodeId {
      if (handle != kUnknownHandle && handle < tree.size()) return handle;
      if (unknown == cct::kNoNode) unknown = GpuUnknownNode(tree);
      return unknown;
    };
    // A kernel under its launch site, as the runtime places it: the site
    // itself when the launch named this kernel (the site is then the kernel
    // node), else a kernel child of the site's placeholder.
    KernelNodeFn kernel_node = [&](uint32_t site, std::string_view kernel) -> uint32_t {
      return GpuSiteKernelNode(tree, node_of(site), kernel);
    };
    GpuAttributor attributor(kUnknownHandle, kernel_node);
    attributor.SetLineNode([&](uint32_t kernel, std::string_view file, uint32_t line) -> uint32_t {
      return GpuLineNode(tree, node_of(kernel), file, line);
    });

    // Pass 2: the batches and PC samples in file order, as the adapter
    // delivered them.
    cupti::ActivityDecoder decoder;
    std::vector<GpuActivity> activities;
    std::vector<uint64_t> aligned;  // CUPTI's records are 8-byte aligned
    std::vector<GpuPcSample> samples;
    uint64_t unnamed = 0, mismatched = 0;
    for (const Event& e : events) {
      if (e.type == RawRecordType::kBatch) {
        const RawBatch& b = batches[e.index];
        activities.clear();
        if (!b.raw.empty()) {
          aligned.assign((b.raw.size() + 7) / 8, 0);
          auto* bytes = reinterpret_cast<uint8_t*>(aligned.data());
          std::memcpy(bytes, b.raw.data(), b.raw.size());
          unnamed += PatchKernelNames(bytes, b.raw.size(), b, names, &mismatched);
          decoder.DecodeBuffer(bytes, b.raw.size(), activities);
        }
        activities.insert(activities.end(), b.api.begin(), b.api.end());
        attributor.Add(sites, activities);
        attributor.AddDropped(b.dropped);
        ++out.batches;
      } else {
        samples.clear();
        if (cct::Status s = ParseRawPcSamples(pc_records[e.index], &samples); !s.ok())
          return cct::Corrupt(path + ": damaged raw GPU dump: " + s.message());
        attributor.AddPcSamples(sites, samples);
        for (const GpuPcSample& p : samples) out.pc_samples += p.samples;
      }
    }
    attributor.Flush(sites, /*give_up=*/true);

    GpuMetricWriter writer(tree);
    for (const GpuNodeEntry& e : attributor.metrics()) writer.Add(node_of(e.node), e.metrics);
    attributor.SealIterations();
    attributor.iteration_values().AppendTo(out.iterations, writer, node_of);

    const GpuAttributionStats& st = attributor.stats();
    out.records = decoder.stats().records;
    out.activities = st.activities;
    out.unknown = st.unknown;
    out.dropped = st.dropped;

    out.decoder_cupti_api = CUPTI_API_VERSION;
    if (const auto gpu = meta.find("gpu"); gpu != meta.end() && gpu->is_object())
      if (const auto facts = gpu->find("facts"); facts != gpu->end() && facts->is_object())
        // The layout the buffers have: the adapter's headers' when it says
        // so (it lays records out again for them), else its libcupti's.
        for (const char* key : {"cupti_layout_api", "cupti_api"})
          if (const auto api = facts->find(key); api != facts->end() && api->is_number_unsigned()) {
            out.recorded_cupti_api = api->get<uint32_t>();
            break;
          }

    nlohmann::json& diag = meta["diagnostics"];
    if (!diag.is_object()) diag = nlohmann::json::object();
    const auto set = [&](const char* key, uint64_t v) { diag[key] = static_cast<int64_t>(v); };
    set("gpu_raw_batches", out.batches);
    set("gpu_records", out.records);
    set("gpu_skipped_records", decoder.stats().skipped);
    set("gpu_dropped_records", out.dropped);
    set("gpu_unknown_activities", out.unknown);
    if (out.pc_samples > 0 || diag.contains("gpu_pc_samples")) {
      set("gpu_pc_samples", out.pc_samples);
      set("gpu_pc_samples_unknown", st.pc_samples_unknown);
    }
    if (st.kernels_without_device) set("gpu_kernels_without_device", st.kernels_without_device);
    if (st.pending_overflow) set("gpu_pending_overflow", st.pending_overflow);
    if (snapshots == 0) set("gpu_raw_snapshots", 0);
    if (out.truncated) set("gpu_raw_truncated", 1);
    if (unnamed) set("gpu_raw_unnamed_kernels", unnamed);
    if (mismatched) set("gpu_raw_name_mismatches", mismatched);
    if (without_node) set("gpu_raw_sites_without_node", without_node);
    if (decoder.stats().unparsed_bytes) set("gpu_raw_unparsed_bytes", decoder.stats().unparsed_bytes);
    if (out.recorded_cupti_api != 0 && out.recorded_cupti_api != out.decoder_cupti_api)
      set("gpu_raw_recorded_cupti_api", out.recorded_cupti_api);
    meta["node_count"] = tree.size();
    out.meta_json = meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return out;
  } catch (const std::bad_alloc&) {
    return cct::IoError(path + ": out of memory replaying the raw GPU dump");
  } catch (const std::exception& e) {
    return cct::Corrupt(path + ": cannot replay the raw GPU dump: " + e.what());
  }
}

}  // namespace collector
