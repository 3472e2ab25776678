// NVTX3 injection: the NVTX adapter (the only file that includes the NVTX
// headers). NVTX is compiled into every library that uses it, each copy with
// its own function tables; each copy loads the library named by
// NVTX_INJECTION64_PATH (cct-record points it at this collector, already
// preloaded, so dlopen returns this same instance) and calls
// InitializeInjectionNvtx2, once per copy. Every call fills that copy's
// tables with the same handlers, so all copies feed one tree.
//
// Handlers run in the program's threads, in normal context. Strings arrive
// as ASCII, wide, or registered handles (nvtx3::scoped_range uses only
// these); null, oversized or unknown ones are counted, never trusted.
#include <nvtx3/nvToolsExt.h>

#include <cstring>
#include <cwchar>
#include <string>

#include "collector/core/runtime.h"  // Active
#include "collector/nvtx/nvtx_ranges.h"

namespace {

constexpr size_t kMaxMessage = 4096;

// Registered-string and domain handles are our ids + 1 disguised as pointers
// (0 stays the null handle).
struct Registered {
  uint32_t domain;
  uint32_t name_id;
};

std::string Narrow(const wchar_t* w) {
  std::string out;
  if (!w) return out;
  for (size_t i = 0; w[i] && out.size() < kMaxMessage; ++i) {
    const auto c = static_cast<uint32_t>(w[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x110000) {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

std::string Ascii(const char* s) {
  if (!s) return {};
  const size_t n = strnlen(s, kMaxMessage + 1);
  if (n > kMaxMessage) collector::NvtxCountProblem("nvtx_long_message");
  return std::string(s, n > kMaxMessage ? kMaxMessage : n);
}

uint32_t DomainId(nvtxDomainHandle_t d) {
  return d ? static_cast<uint32_t>(reinterpret_cast<uintptr_t>(d) - 1) : 0;
}

// The name id of a message in a domain; nullopt-like UINT32_MAX for nulls.
uint32_t NameOf(uint32_t domain, const char* ascii) {
  if (!ascii) {
    collector::NvtxCountProblem("nvtx_null_message");
    return collector::NvtxName(domain, "<null>");
  }
  return collector::NvtxName(domain, Ascii(ascii));
}
uint32_t NameOfW(uint32_t domain, const wchar_t* wide) {
  if (!wide) {
    collector::NvtxCountProblem("nvtx_null_message");
    return collector::NvtxName(domain, "<null>");
  }
  return collector::NvtxName(domain, Narrow(wide));
}
uint32_t NameOfAttr(uint32_t domain, const nvtxEventAttributes_t* a) {
  if (!a) {
    collector::NvtxCountProblem("nvtx_null_message");
    return collector::NvtxName(domain, "<null>");
  }
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return NameOf(domain, a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return NameOfW(domain, a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      const auto h = reinterpret_cast<uintptr_t>(a->message.registered);
      if (h == 0) {
        collector::NvtxCountProblem("nvtx_null_message");
        return collector::NvtxName(domain, "<null>");
      }
      return static_cast<uint32_t>(h - 1);  // the registered string's name id (already in its domain)
    }
    default:
      collector::NvtxCountProblem("nvtx_unnamed_range");
      return collector::NvtxName(domain, "<unnamed>");
  }
}

// --- handlers: core
void MarkEx(const nvtxEventAttributes_t* a) { collector::NvtxMark(NameOfAttr(0, a)); }
void MarkA(const char* m) { collector::NvtxMark(NameOf(0, m)); }
void MarkW(const wchar_t* m) { collector::NvtxMark(NameOfW(0, m)); }
nvtxRangeId_t RangeStartEx(const nvtxEventAttributes_t* a) { return collector::NvtxStart(NameOfAttr(0, a)); }
nvtxRangeId_t RangeStartA(const char* m) { return collector::NvtxStart(NameOf(0, m)); }
nvtxRangeId_t RangeStartW(const wchar_t* m) { return collector::NvtxStart(NameOfW(0, m)); }
void RangeEnd(nvtxRangeId_t id) { collector::NvtxEnd(id); }
int RangePushEx(const nvtxEventAttributes_t* a) {
  collector::NvtxPush(0, NameOfAttr(0, a));
  return 0;
}
int RangePushA(const char* m) {
  collector::NvtxPush(0, NameOf(0, m));
  return 0;
}
int RangePushW(const wchar_t* m) {
  collector::NvtxPush(0, NameOfW(0, m));
  return 0;
}
int RangePop() {
  collector::NvtxPop(0);
  return 0;
}
void NameOsThreadA(uint32_t tid, const char* name) {
  if (name) collector::NvtxNameThread(tid, Ascii(name));
}
void NameOsThreadW(uint32_t tid, const wchar_t* name) {
  if (name) collector::NvtxNameThread(tid, Narrow(name));
}

// --- handlers: domains (core2)
void DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  collector::NvtxMark(NameOfAttr(DomainId(d), a));
}
nvtxRangeId_t DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return collector::NvtxStart(NameOfAttr(DomainId(d), a));
}
void DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { collector::NvtxEnd(id); }
int DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  collector::NvtxPush(DomainId(d), NameOfAttr(DomainId(d), a));
  return 0;
}
int DomainRangePop(nvtxDomainHandle_t d) {
  collector::NvtxPop(DomainId(d));
  return 0;
}
nvtxStringHandle_t DomainRegisterStringA(nvtxDomainHandle_t d, const char* s) {
  const uint32_t id = NameOf(DomainId(d), s);
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<uintptr_t>(id) + 1);
}
nvtxStringHandle_t DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t* s) {
  const uint32_t id = NameOfW(DomainId(d), s);
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<uintptr_t>(id) + 1);
}
nvtxDomainHandle_t DomainCreateA(const char* name) {
  const uint32_t id = collector::NvtxDomain(name ? Ascii(name) : "<null>");
  return reinterpret_cast<nvtxDomainHandle_t>(static_cast<uintptr_t>(id) + 1);
}
nvtxDomainHandle_t DomainCreateW(const wchar_t* name) {
  const uint32_t id = collector::NvtxDomain(name ? Narrow(name) : "<null>");
  return reinterpret_cast<nvtxDomainHandle_t>(static_cast<uintptr_t>(id) + 1);
}
void DomainDestroy(nvtxDomainHandle_t) {}
void Initialize(const void*) {}

template <class F>
void Set(NvtxFunctionTable table, unsigned size, unsigned id, F fn) {
  if (table && id < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  if (!get || !collector::Active()) return 0;  // not recording: NVTX calls stay no-ops
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) || !callbacks->GetModuleFunctionTable)
    return 0;
  NvtxFunctionTable core = nullptr;
  unsigned core_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size)) {
    Set(core, core_size, NVTX_CBID_CORE_MarkEx, MarkEx);
    Set(core, core_size, NVTX_CBID_CORE_MarkA, MarkA);
    Set(core, core_size, NVTX_CBID_CORE_MarkW, MarkW);
    Set(core, core_size, NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
    Set(core, core_size, NVTX_CBID_CORE_RangeStartA, RangeStartA);
    Set(core, core_size, NVTX_CBID_CORE_RangeStartW, RangeStartW);
    Set(core, core_size, NVTX_CBID_CORE_RangeEnd, RangeEnd);
    Set(core, core_size, NVTX_CBID_CORE_RangePushEx, RangePushEx);
    Set(core, core_size, NVTX_CBID_CORE_RangePushA, RangePushA);
    Set(core, core_size, NVTX_CBID_CORE_RangePushW, RangePushW);
    Set(core, core_size, NVTX_CBID_CORE_RangePop, RangePop);
    Set(core, core_size, NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA);
    Set(core, core_size, NVTX_CBID_CORE_NameOsThreadW, NameOsThreadW);
  }
  NvtxFunctionTable core2 = nullptr;
  unsigned core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size)) {
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, DomainMarkEx);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
    Set(core2, core2_size, NVTX_CBID_CORE2_Initialize, Initialize);
  }
  return 1;
}
