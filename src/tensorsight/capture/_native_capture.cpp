/* tensorsight native op capture: the level-"op" statistics dump without Python per op.
 *
 * Built on first use by tensorsight/capture/_native_capture.py (g++ against the headers and
 * libraries of the torch wheel in use) and loaded with torch.ops.load_library. A
 * thread-local RecordFunction observer sees every op call on the capturing thread; it keeps
 * the calls the Python path (a TorchDispatchMode, backends/torch_ops.py) records and
 * measures their tensors with the same C statistics kernel (_stats_kernel.c, linked in):
 *
 *   - an op with a CompositeImplicitAutograd kernel is not recorded (it decomposes before
 *     the dispatcher reaches the Python key, so the mode sees its parts, not the op);
 *   - an op called while a recorded op runs is not recorded (the mode is off inside a
 *     kernel too);
 *   - tensorsight's own ops (``tensorsight_native::``) are not recorded.
 *
 * Each op's arguments are written as the op table's ``args`` text, byte for byte as
 * capture/_args.py writes it (dtypes, layouts and memory formats travel as ints: the schema's
 * real type says which).
 *
 * Inputs are measured when the op starts, outputs when it ends (after autograd bumped the
 * version of tensors written in place, so cached measurements stay exact). Direction comes
 * from the autograd node running the op; the sequence numbers of the nodes a forward op
 * creates map to the module that ran it (``ts_module``, set by Python's module hooks), which
 * is how backward ops get their forward module. Records stay here until Python pulls them (tsn_pull).
 */
#include <ATen/ATen.h>
#include <ATen/SequenceNumber.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <typeinfo>
#include <unordered_map>
#include <vector>

extern "C" {
#include "_stats_kernel.c"  // dumpformat/: the Python path's kernel, compiled into this library

/* Written by Python through ctypes: the innermost running module's id (0: none), and a
   nonzero value while tensorsight's own code runs torch ops on this thread. */
int32_t ts_module = 0;
int32_t ts_paused = 0;
void ts_set_module(int32_t id);
/* Read by Python: ops waiting to be pulled (a cheap "is a pull worth it" check), and
   nonzero while a recorded op runs (Python inside it, e.g. a custom op's kernel, must not
   pull: that op's rows are not finished). */
int64_t ts_pending = 0;
int32_t ts_busy = 0;
}

namespace {

constexpr int64_t kCacheMinNumel = 1 << 13;  // as _recorder._CACHE_MIN_NUMEL
constexpr int64_t kOpColumns = 6;  // per op: name, direction, module, grad_fn, tensors, args

struct OpInfo {
  std::string name;  // fn.name() it was made for (the pointer key is checked against it)
  bool skip = true;
  int32_t name_id = -1;
  std::vector<int32_t> input_names;  // per schema argument: the interned name of arg_names
  std::vector<std::string> arg_names;  // per schema argument: "input.<i>" or "input.<name>"
  bool single_list_return = false;
  std::vector<bool> written;  // per schema argument: the op writes into it
  // an op that returns nothing (``_foreach_add_``): the positions of the arguments it writes
  // into, recorded as its outputs when it ends (as the Python path's torch_ops does)
  std::vector<size_t> void_written;
  std::vector<std::string> keys;  // per schema argument: "\"<name>\":" of the args text
  std::vector<int> kinds;  // per schema argument: what an int means (see ArgKind)
};

/* the schema type behind an int IValue (a dtype, layout or memory format travels as one) */
enum ArgKind { kPlain = 0, kDtype = 1, kLayout = 2, kMemoryFormat = 3 };

/* what one storage's cached measurements are: the elements (data pointer, count, layout, dtype) at
   one version of the viewing tensor. Any write by an op to the storage drops them all: a
   version number alone does not name the contents (``t.data`` has its own counter). */
struct Entry {
  const void* data;
  int64_t numel;
  int64_t dtype;
  int64_t version;
  std::vector<int64_t> layout;  // layout_of(): which elements from data on
  std::array<double, 8> stats;
};

struct PerStorage {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  std::vector<Entry> entries;  // a few (views of one weight); the oldest goes first
};

struct State {
  std::mutex lock;
  std::thread::id owner;
  at::CallbackHandle handle = 0;
  bool active = false;
  // interned strings; new ones since the last pull are sent with it
  std::vector<std::string> strings;
  std::unordered_map<std::string, int32_t> string_ids;
  size_t strings_sent = 0;
  std::unordered_map<const void*, OpInfo> ops;  // by the schema's name pointer
  std::unordered_map<const char*, int32_t> node_names;  // by typeid name
  std::unordered_map<int64_t, int32_t> seq_module;  // forward sequence number -> module id
  std::unordered_map<const void*, PerStorage> cache;  // by StorageImpl, while it lives
  size_t cache_swept = 0;  // entries left by the last sweep (see sweep())
  uint64_t seq_seen = 0;  // sequence numbers below this have been given a module
  std::vector<std::pair<std::thread::id, at::CallbackHandle>> stale;  // see stop()
  // records: per op [name, direction, module, grad_fn, tensors, args]; per tensor [name, dtype,
  // ndim, has_stats, device] + shape + 8 statistics
  std::vector<int64_t> op_rows;
  std::vector<int64_t> tensor_rows;
  std::vector<int64_t> shapes;
  std::vector<double> stats;
  int64_t slow = 0;  // tensors measured through a float64 copy
  int32_t cpu_id = -1;  // the interned "cpu"
};

State* g = nullptr;
thread_local int t_depth = 0;

int32_t intern(const std::string& s) {
  auto it = g->string_ids.find(s);
  if (it != g->string_ids.end()) return it->second;
  int32_t id = static_cast<int32_t>(g->strings.size());
  g->strings.push_back(s);
  g->string_ids.emplace(s, id);
  return id;
}

const OpInfo& info_of(const at::RecordFunction& fn) {
  const void* key = static_cast<const void*>(fn.name());
  auto it = g->ops.find(key);
  // schema names live as long as their op; the text check guards a reused pointer
  if (it != g->ops.end() && it->second.name == fn.name()) return it->second;
  OpInfo info;
  std::string name = fn.name();
  info.name = name;
  auto opname = fn.operator_name();
  size_t sep = name.find("::");
  if (opname && sep != std::string::npos && name.rfind("tensorsight_native::", 0) != 0) {
    auto handle = c10::Dispatcher::singleton().findOp(*opname);
    bool composite =
        handle && handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
    if (handle && !composite) {
      info.skip = false;
      const std::string& overload = opname->overload_name;
      // str(OpOverload) of the Python path: "aten.addmm.default"
      info.name_id = intern(name.substr(0, sep) + "." + name.substr(sep + 2) + "." +
                            (overload.empty() ? "default" : overload));
      const auto& schema = handle->schema();
      size_t positional = 0;
      for (const auto& arg : schema.arguments()) {
        std::string n = arg.kwarg_only() ? "input." + arg.name() : "input." + std::to_string(positional++);
        info.arg_names.push_back(n);
        info.input_names.push_back(intern(n));
      }
      for (const auto& arg : schema.arguments()) {
        info.written.push_back(arg.alias_info() != nullptr && arg.alias_info()->isWrite());
        info.keys.push_back("\"" + arg.name() + "\":");
        c10::TypePtr type = arg.real_type();  // ScalarType, not int (type() is int)
        if (type->kind() == c10::TypeKind::OptionalType) {
          type = type->castRaw<c10::OptionalType>()->getElementType();
        }
        switch (type->kind()) {
          case c10::TypeKind::ScalarTypeType: info.kinds.push_back(kDtype); break;
          case c10::TypeKind::LayoutType: info.kinds.push_back(kLayout); break;
          case c10::TypeKind::MemoryFormatType: info.kinds.push_back(kMemoryFormat); break;
          default: info.kinds.push_back(kPlain);
        }
      }
      const auto& rets = schema.returns();
      info.single_list_return = rets.size() == 1 && rets[0].type()->kind() == c10::TypeKind::ListType;
      if (rets.empty()) {
        for (size_t i = 0; i < info.written.size(); i++) {
          if (info.written[i]) info.void_written.push_back(i);
        }
      }
    }
  }
  return g->ops.insert_or_assign(key, std::move(info)).first->second;
}

bool kernel_stats(const at::Tensor& t, double* out) {
  const void* p = t.const_data_ptr();
  int64_t n = t.numel();
  switch (t.scalar_type()) {
    case at::kDouble: ts_stats_f64(static_cast<const double*>(p), n, out); return true;
    case at::kFloat: ts_stats_f32(static_cast<const float*>(p), n, out); return true;
    case at::kHalf: ts_stats_f16(static_cast<const uint16_t*>(p), n, out); return true;
    case at::kBFloat16: ts_stats_bf16(static_cast<const uint16_t*>(p), n, out); return true;
    case at::kLong: ts_stats_i64(static_cast<const int64_t*>(p), n, out); return true;
    case at::kInt: ts_stats_i32(static_cast<const int32_t*>(p), n, out); return true;
    case at::kShort: ts_stats_i16(static_cast<const int16_t*>(p), n, out); return true;
    case at::kChar: ts_stats_i8(static_cast<const int8_t*>(p), n, out); return true;
    case at::kByte:
    case at::kBool: ts_stats_u8(static_cast<const uint8_t*>(p), n, out); return true;
    default: return false;
  }
}

/* [min, max, sum, sumsq, nan, +inf, -inf, numel]; false: no statistics (empty, meta,
   sparse, quantized, or a dtype float64 cannot hold) */
bool measure_impl(const at::Tensor& t, double* out) {
  int64_t n = t.numel();
  if (n == 0 || !t.has_storage() || t.layout() != c10::kStrided || t.is_quantized() ||
      t.device().type() == c10::DeviceType::Meta || t.is_neg() || t.is_conj())
    return false;
  out[7] = static_cast<double>(n);
  // memory holding each element once (any order): the kernel reads it in place
  bool dense = t.is_cpu() && t.is_non_overlapping_and_dense();
  if (dense) {
    for (int64_t s : t.strides()) dense = dense && s >= 0;
  }
  if (dense && kernel_stats(t, out)) return true;
  // anything else: a float64 copy on the CPU (as the Python path: same values, sums to
  // rounding); observation is off meanwhile so the copy is not recorded
  at::RecordFunctionGuard off(false);
  at::Tensor x = t.detach();
  if (x.is_complex()) x = at::view_as_real(x);
  try {
    x = x.to(at::kCPU, at::kDouble).contiguous();
  } catch (const c10::Error&) {
    return false;
  }
  g->slow++;
  ts_stats_f64(x.const_data_ptr<double>(), x.numel(), out);
  out[7] = static_cast<double>(x.numel());
  return true;
}

bool measure(const at::Tensor& t, double* out) {
  try {
    return measure_impl(t, out);
  } catch (const std::exception&) {  // a tensor this path cannot read: no statistics
    return false;
  }
}

bool cacheable(const at::Tensor& t) {
  return t.numel() > kCacheMinNumel && t.is_cpu() && t.has_storage() && !t.is_inference();
}

/* the elements a strided tensor reads from its data pointer on, in a form that does not
   depend on the order of its dimensions: (size, stride) pairs without size-1 dimensions,
   sorted by stride, a dimension folded into the next when they are one run (stride of one
   = size * stride of the other). Equal forms read the same elements, so views of one
   tensor (``split`` -> ``view`` -> ``transpose``, as attention's q/k/v) share one
   measurement; a dense tensor's form is [numel, 1] whatever its order. */
std::vector<int64_t> layout_of(const at::Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  auto sizes = t.sizes();
  auto strides = t.strides();
  for (size_t i = 0; i < sizes.size(); i++) {
    if (sizes[i] != 1) dims.emplace_back(strides[i], sizes[i]);
  }
  std::sort(dims.begin(), dims.end());
  std::vector<int64_t> out;
  int64_t size = 0, stride = 0;
  for (const auto& [st, sz] : dims) {
    if (size != 0 && stride > 0 && st == size * stride) {
      size *= sz;  // this dimension continues the run
      continue;
    }
    if (size != 0) out.insert(out.end(), {size, stride});
    size = sz;
    stride = st;
  }
  if (size != 0) out.insert(out.end(), {size, stride});
  return out;
}

/* drop the entries of storages that died. Each entry's weak reference keeps its StorageImpl
   object allocated (not its data); left until a freed address came back, thousands of dead
   StorageImpls a step stayed scattered among the tensors' memory, and the heap grew by
   ~20 MB a step on a small transformer (fragmentation: malloc's free memory grew, its
   memory in use did not), each step's tensors landing on fresh pages (page faults, about a
   quarter of the capture's cost). Called at each pull (a step's end, every PULL_SECS while
   modules run) and when the cache doubled since the last sweep. */
void sweep() {
  for (auto i = g->cache.begin(); i != g->cache.end();) {
    i = i->second.storage.expired() ? g->cache.erase(i) : std::next(i);
  }
  g->cache_swept = g->cache.size();
}

/* measured now, or the measurement of the same elements at the same version */
bool measure_cached(const at::Tensor& t, double* out) {
  if (!cacheable(t)) return measure(t, out);
  c10::StorageImpl* impl = t.storage().unsafeGetStorageImpl();
  const void* data = t.const_data_ptr();
  auto dtype = static_cast<int64_t>(t.scalar_type());
  auto version = static_cast<int64_t>(t._version());
  std::vector<int64_t> layout = layout_of(t);
  auto it = g->cache.find(impl);
  if (it != g->cache.end()) {
    auto alive = it->second.storage.lock();
    if (alive && alive.get() == impl) {
      for (const Entry& e : it->second.entries) {
        if (e.data == data && e.numel == t.numel() && e.dtype == dtype && e.version == version &&
            e.layout == layout) {
          std::memcpy(out, e.stats.data(), 8 * sizeof(double));
          return true;
        }
      }
    } else {
      g->cache.erase(it);  // a new storage at a freed one's address
      it = g->cache.end();
    }
  }
  if (!measure(t, out)) return false;
  if (it == g->cache.end()) {
    if (g->cache.size() > std::max<size_t>(4096, 2 * g->cache_swept)) sweep();
    PerStorage fresh{c10::weak_intrusive_ptr<c10::StorageImpl>(t.storage().getWeakStorageImpl()), {}};
    it = g->cache.emplace(impl, std::move(fresh)).first;
  }
  auto& entries = it->second.entries;
  if (entries.size() >= 8) entries.erase(entries.begin());
  Entry e{data, t.numel(), dtype, version, std::move(layout), {}};
  std::memcpy(e.stats.data(), out, 8 * sizeof(double));
  entries.push_back(std::move(e));
  return true;
}

/* the storages of the arguments an op writes into (read when it starts: the arguments are
   gone by the time it ends) */
std::vector<const void*> written_storages(const OpInfo& info, c10::ArrayRef<const c10::IValue> in) {
  std::vector<const void*> out;
  auto one = [&out](const c10::IValue& x) {
    if (x.isTensor()) {
      const at::Tensor& t = x.toTensor();
      if (t.defined() && t.has_storage()) out.push_back(t.storage().unsafeGetStorageImpl());
    }
  };
  try {
    for (size_t i = 0; i < in.size() && i < info.written.size(); i++) {
      if (!info.written[i]) continue;
      if (in[i].isTensorList() || in[i].isList()) {
        for (const c10::IValue& x : in[i].toListRef()) one(x);
      } else {
        one(in[i]);
      }
    }
  } catch (const std::exception&) {  // no storage to name: nothing was cached for it
  }
  return out;
}

/* give the autograd nodes numbered [seq_seen, peek()) to ``module`` (a node belongs to the
   module running when it was made: by an op, or by Python such as autograd.Function) */
void settle(int64_t module) {
  uint64_t end = at::sequence_number::peek();
  for (uint64_t s = g->seq_seen; s < end; s++) {
    g->seq_module.emplace(static_cast<int64_t>(s), static_cast<int32_t>(module));
  }
  if (end > g->seq_seen) g->seq_seen = end;
}

/* one tensor's row; false (nothing written) for a tensor whose metadata cannot be read
   here (nested tensors have no sizes, some subclasses no strides): the op goes on without it */
bool add_tensor(const at::Tensor& t, int32_t name) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<int64_t> sizes;
  int64_t dtype = 0, device = 0;
  bool ok = false;
  try {
    if (t.is_nested()) return false;
    auto dims = t.sizes();
    sizes.assign(dims.begin(), dims.end());
    dtype = static_cast<int64_t>(t.scalar_type());
    device = t.is_cpu() ? g->cpu_id : intern(t.device().str());
    ok = measure_cached(t, s);
  } catch (const std::exception&) {
    return false;
  }
  auto ndim = static_cast<int64_t>(sizes.size());
  g->tensor_rows.insert(g->tensor_rows.end(), {name, dtype, ndim, ok ? 1 : 0, device});
  g->shapes.insert(g->shapes.end(), sizes.begin(), sizes.end());
  g->stats.insert(g->stats.end(), s, s + 8);
  return true;
}

int64_t add_value(const c10::IValue& v, int32_t name, const std::string& prefix) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    // a Python number passed to an op (mul(x, 0.5)): the Python path sees the number
    if (!t.defined() || t.unsafeGetTensorImpl()->is_wrapped_number()) return 0;
    return add_tensor(t, name) ? 1 : 0;
  }
  if (v.isTensorList() || v.isList()) {
    int64_t count = 0, j = 0;
    for (const c10::IValue& x : v.toListRef()) {
      if (x.isTensor() && x.toTensor().defined() &&
          add_tensor(x.toTensor(), intern(prefix + "." + std::to_string(j)))) {
        count++;
      }
      j++;
    }
    return count;
  }
  return 0;
}

/* ---- the args column: the same text as capture/_args.py writes (see its docstring) ---- */

constexpr size_t kArgsLimit = 4096;  // as _args.ARGS_LIMIT

void put_float(std::string& out, double x) {
  if (std::isnan(x)) { out += "{\"float\":\"nan\"}"; return; }
  if (std::isinf(x)) { out += x > 0 ? "{\"float\":\"inf\"}" : "{\"float\":\"-inf\"}"; return; }
  char buf[40];
  for (int p = 1; p <= 17; p++) {
    std::snprintf(buf, sizeof buf, "%.*g", p, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  out += buf;
  if (!std::strpbrk(buf, ".en")) out += ".0";
}

void put_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

const char* dtype_text(int64_t code) {
  switch (static_cast<at::ScalarType>(code)) {
    case at::kDouble: return "float64";
    case at::kFloat: return "float32";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kShort: return "int16";
    case at::kChar: return "int8";
    case at::kByte: return "uint8";
    case at::kBool: return "bool";
    case at::kComplexFloat: return "complex64";
    case at::kComplexDouble: return "complex128";
    case at::kFloat8_e4m3fn: return "float8_e4m3fn";
    case at::kFloat8_e5m2: return "float8_e5m2";
    default: return nullptr;
  }
}

void put_int(std::string& out, int64_t v, int kind) {
  const char* text = nullptr;
  const char* key = nullptr;
  if (kind == kDtype) {
    key = "dtype";
    text = dtype_text(v);
  } else if (kind == kLayout) {
    key = "layout";
    text = v == static_cast<int64_t>(c10::kStrided) ? "strided"
         : v == static_cast<int64_t>(c10::kSparse) ? "sparse_coo" : nullptr;
  } else if (kind == kMemoryFormat) {
    key = "memory_format";
    switch (static_cast<c10::MemoryFormat>(v)) {
      case c10::MemoryFormat::Contiguous: text = "contiguous_format"; break;
      case c10::MemoryFormat::Preserve: text = "preserve_format"; break;
      case c10::MemoryFormat::ChannelsLast: text = "channels_last"; break;
      case c10::MemoryFormat::ChannelsLast3d: text = "channels_last_3d"; break;
      default: break;
    }
  }
  if (key == nullptr) {
    out += std::to_string(v);
  } else if (text == nullptr) {
    out += "{\"unsupported\":\"" + std::string(key) + std::to_string(v) + "\"}";
  } else {
    out += "{\"" + std::string(key) + "\":\"" + text + "\"}";
  }
}

void put_value(std::string& out, const c10::IValue& v, const std::string& name, int kind) {
  if (v.isNone()) {
    out += "null";
  } else if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) {
      out += "null";
    } else if (t.unsafeGetTensorImpl()->is_wrapped_number()) {  // Python passed a number
      // read in place: item() is an op, whose observer would wait for this lock
      const void* p = t.is_cpu() ? t.const_data_ptr() : nullptr;
      auto st = t.scalar_type();
      if (p != nullptr && st == at::kBool) {
        out += *static_cast<const bool*>(p) ? "true" : "false";
      } else if (p != nullptr && st == at::kLong) {
        out += std::to_string(*static_cast<const int64_t*>(p));
      } else if (p != nullptr && st == at::kDouble) {
        put_float(out, *static_cast<const double*>(p));
      } else {
        out += "{\"unsupported\":\"" + std::string(c10::toString(st)) + "\"}";
      }
    } else {
      out += "{\"tensor\":\"" + name + "\"}";
    }
  } else if (v.isBool()) {
    out += v.toBool() ? "true" : "false";
  } else if (v.isInt()) {
    put_int(out, v.toInt(), kind);
  } else if (v.isDouble()) {
    put_float(out, v.toDouble());
  } else if (v.isString()) {
    put_string(out, v.toStringRef());
  } else if (v.isDevice()) {
    out += "{\"device\":\"" + v.toDevice().str() + "\"}";
  } else if (v.isList() || v.isTuple()) {
    out += '[';
    int64_t j = 0;
    auto items = v.isList() ? v.toListRef() : c10::ArrayRef<c10::IValue>(v.toTupleRef().elements());
    for (const c10::IValue& x : items) {
      if (j) out += ',';
      put_value(out, x, name + "." + std::to_string(j), kind);
      j++;
    }
    out += ']';
  } else if (v.isGenerator()) {
    out += "{\"unsupported\":\"Generator\"}";
  } else if (v.isComplexDouble()) {
    out += "{\"unsupported\":\"complex\"}";
  } else {
    out += "{\"unsupported\":\"" + v.tagKind() + "\"}";
  }
}

/* the args text of one call: schema name -> value, in schema order */
int32_t args_id(const OpInfo& info, c10::ArrayRef<const c10::IValue> inputs) {
  std::string out = "{";
  try {
    for (size_t i = 0; i < inputs.size() && i < info.keys.size(); i++) {
      if (i) out += ',';
      out += info.keys[i];
      put_value(out, inputs[i], info.arg_names[i], info.kinds[i]);
    }
  } catch (const std::exception&) {
    return -1;  // an argument this path cannot read: no args text
  }
  out += '}';
  if (out.size() > kArgsLimit) out = "{\"__omitted__\":" + std::to_string(out.size()) + "}";
  return intern(out);
}

struct Ctx : at::ObserverContext {
  bool recorded = false;
  bool forward = false;
  std::vector<const void*> written;  // storages this op writes (their cache entries go)
  // an op that returns nothing: the arguments it writes into (OpInfo::void_written), held
  // from the start (inputs() is valid only then) to be recorded as its outputs at the end
  std::vector<c10::IValue> void_outputs;
  int64_t module = 0;
  int unwinding = 0;  // std::uncaught_exceptions() when the op started
  // buffer sizes before this op's rows (to drop them if the op fails)
  size_t op_row = 0, tensor_rows = 0, shapes = 0, stats = 0;
};

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  // another thread, or a callback left on a thread other than the one that stopped capture
  if (ts_paused || !g->active || std::this_thread::get_id() != g->owner) return nullptr;
  std::lock_guard<std::mutex> guard(g->lock);
  const OpInfo& info = info_of(fn);
  if (info.skip) return nullptr;
  auto ctx = std::make_unique<Ctx>();
  // writes invalidate the cache, nested ones too (an op's inputs are only readable now)
  if (std::find(info.written.begin(), info.written.end(), true) != info.written.end()) {
    ctx->written = written_storages(info, fn.inputs());
  }
  if (t_depth++ != 0) return ctx;  // inside a recorded op: not recorded
  ctx->recorded = true;
  ctx->unwinding = std::uncaught_exceptions();
  int64_t direction = 0, module = ts_module, grad_fn = -1;
  auto node = torch::autograd::get_current_node();
  if (node) {
    direction = 1;
    const char* type_name = typeid(*node).name();
    auto it = g->node_names.find(type_name);
    if (it == g->node_names.end()) it = g->node_names.emplace(type_name, intern(node->name())).first;
    grad_fn = it->second;
    auto m = g->seq_module.find(static_cast<int64_t>(node->sequence_nr()));
    module = m == g->seq_module.end() ? 0 : m->second;
  } else {
    settle(module);  // nodes made since the last op (e.g. by an autograd.Function)
    ctx->forward = true;
    ctx->module = module;
  }
  ctx->op_row = g->op_rows.size();
  ctx->tensor_rows = g->tensor_rows.size();
  ctx->shapes = g->shapes.size();
  ctx->stats = g->stats.size();
  auto inputs = fn.inputs();
  for (size_t i : info.void_written) {
    if (i < inputs.size()) ctx->void_outputs.push_back(inputs[i]);
  }
  int64_t args = args_id(info, inputs);
  g->op_rows.insert(g->op_rows.end(), {info.name_id, direction, module, grad_fn, 0, args});
  int64_t count = 0;
  for (size_t i = 0; i < inputs.size() && i < info.input_names.size(); i++) {
    count += add_value(inputs[i], info.input_names[i], info.arg_names[i]);
  }
  g->op_rows[ctx->op_row + 4] = count;
  ts_busy = 1;
  return ctx;
}

void on_exit(const at::RecordFunction& fn, at::ObserverContext* c) {
  auto* ctx = static_cast<Ctx*>(c);
  if (ctx == nullptr) return;
  std::lock_guard<std::mutex> guard(g->lock);
  t_depth--;
  for (const void* storage : ctx->written) g->cache.erase(storage);  // new values there
  if (!ctx->recorded) return;
  ts_busy = 0;
  if (ctx->forward) settle(ctx->module);  // the nodes it made belong to its module
  if (std::uncaught_exceptions() > ctx->unwinding) {  // the op failed: no row (Python: none)
    g->op_rows.resize(ctx->op_row);
    g->tensor_rows.resize(ctx->tensor_rows);
    g->shapes.resize(ctx->shapes);
    g->stats.resize(ctx->stats);
    return;
  }
  const OpInfo& info = info_of(fn);
  int64_t count = 0;
  const auto& outputs = fn.outputs();
  if (info.single_list_return && outputs.size() == 1 && outputs[0].isList()) {
    int64_t j = 0;
    for (const c10::IValue& x : outputs[0].toListRef()) {
      if (x.isTensor() && x.toTensor().defined() &&
          add_tensor(x.toTensor(), intern("output." + std::to_string(j)))) {
        count++;
      }
      j++;
    }
  } else if (outputs.empty() && !ctx->void_outputs.empty()) {
    // nothing returned: the written arguments, named as if returned (one: itself; several:
    // a tuple of them), measured now that the op wrote them
    const auto& written = ctx->void_outputs;
    if (written.size() == 1) {
      count += add_value(written[0], intern("output.0"), "output");
    } else {
      for (size_t k = 0; k < written.size(); k++) {
        std::string prefix = "output." + std::to_string(k);
        count += add_value(written[k], intern(prefix), prefix);
      }
    }
  } else {
    for (size_t i = 0; i < outputs.size(); i++) {
      std::string prefix = "output." + std::to_string(i);
      count += add_value(outputs[i], intern(prefix), prefix);
    }
  }
  g->op_rows[ctx->op_row + 4] += count;
  ts_pending = static_cast<int64_t>(g->op_rows.size() / kOpColumns);
}

void start() {
  if (g == nullptr) g = new State();  // never freed: observers may outlive static teardown
  std::lock_guard<std::mutex> guard(g->lock);
  TORCH_CHECK(!g->active, "tensorsight native capture: already started");
  TORCH_CHECK(g->cpu_id >= 0, "tensorsight native capture: reset() first");
  g->owner = std::this_thread::get_id();
  // callbacks a stop() on another thread could not remove: this thread's go now
  auto& stale = g->stale;
  for (auto it = stale.begin(); it != stale.end();) {
    if (it->first == g->owner) {
      at::removeCallback(it->second);
      it = stale.erase(it);
    } else {
      ++it;
    }
  }
  auto cb = at::RecordFunctionCallback(on_enter, on_exit);
  cb.needsInputs(true).needsOutputs(true).scopes({at::RecordScope::FUNCTION});
  g->handle = at::addThreadLocalCallback(cb);
  g->active = true;
  g->seq_seen = at::sequence_number::peek();  // nodes made before capture have no module here
  t_depth = 0;
  ts_busy = 0;
}

void stop() {
  if (g == nullptr) return;
  std::lock_guard<std::mutex> guard(g->lock);
  if (!g->active) return;
  // a thread-local callback can only be removed on its thread; until then it stays inert
  if (std::this_thread::get_id() == g->owner) {
    at::removeCallback(g->handle);
  } else {
    g->stale.emplace_back(g->owner, g->handle);
  }
  g->active = false;
  ts_busy = 0;
}

}  // namespace

/* the module hooks' way to change ts_module: the autograd nodes made so far belong to the
   module that was running */
extern "C" void ts_set_module(int32_t id) {
  if (g != nullptr && g->active && std::this_thread::get_id() == g->owner) {
    std::lock_guard<std::mutex> guard(g->lock);
    settle(ts_module);
  }
  ts_module = id;
}

namespace {

void new_step() {
  if (g == nullptr) return;
  std::lock_guard<std::mutex> guard(g->lock);
  g->seq_module.clear();
}

at::Tensor as_tensor(std::vector<int64_t>& v) {
  return at::tensor(at::ArrayRef<int64_t>(v), at::kLong);
}

/* (op rows, tensor rows, shapes, statistics, strings interned since the last pull) */
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, std::vector<std::string>> pull() {
  TORCH_CHECK(g != nullptr, "tensorsight native capture: not started");
  std::lock_guard<std::mutex> guard(g->lock);
  TORCH_CHECK(ts_busy == 0, "tensorsight native capture: pull() while a recorded op runs");
  at::RecordFunctionGuard off(false);
  auto ops = as_tensor(g->op_rows).view({-1, kOpColumns});
  auto tensors = as_tensor(g->tensor_rows).view({-1, 5});
  auto shapes = as_tensor(g->shapes);
  auto stats = at::tensor(at::ArrayRef<double>(g->stats), at::kDouble).view({-1, 8});
  std::vector<std::string> fresh(g->strings.begin() + static_cast<std::ptrdiff_t>(g->strings_sent),
                                 g->strings.end());
  g->strings_sent = g->strings.size();
  g->op_rows.clear();
  g->tensor_rows.clear();
  g->shapes.clear();
  g->stats.clear();
  ts_pending = 0;
  sweep();
  return {ops, tensors, shapes, stats, fresh};
}

/* forget interned strings and cached statistics (a new session starts from id 0) */
void reset() {
  if (g == nullptr) g = new State();
  std::lock_guard<std::mutex> guard(g->lock);
  TORCH_CHECK(!g->active, "tensorsight native capture: reset() while started");
  g->strings.clear();
  g->string_ids.clear();
  g->strings_sent = 0;
  g->ops.clear();
  g->node_names.clear();
  g->seq_module.clear();
  g->cache.clear();
  g->cache_swept = 0;
  g->op_rows.clear();
  g->tensor_rows.clear();
  g->shapes.clear();
  g->stats.clear();
  g->slow = 0;
  g->cpu_id = intern("cpu");
  ts_pending = 0;
}

/* the statistics of one tensor through the same cache (Python's own rows: parameter
   gradients); [] when it has none */
std::vector<double> measure_one(const at::Tensor& t) {
  TORCH_CHECK(g != nullptr, "tensorsight native capture: not started");
  std::lock_guard<std::mutex> guard(g->lock);
  at::RecordFunctionGuard off(false);
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  try {
    if (!t.defined() || t.is_nested() || !measure_cached(t, s)) return {};
  } catch (const std::exception&) {
    return {};
  }
  return std::vector<double>(s, s + 8);
}

int64_t slow_count() { return g == nullptr ? 0 : g->slow; }

/* storages with cached measurements (tests: dead ones go at each pull) */
int64_t cache_size() {
  if (g == nullptr) return 0;
  std::lock_guard<std::mutex> guard(g->lock);
  return static_cast<int64_t>(g->cache.size());
}

int64_t dtype_code(const at::Tensor& t) { return static_cast<int64_t>(t.scalar_type()); }

}  // namespace

TORCH_LIBRARY(tensorsight_native, m) {
  m.def("start() -> ()", start);
  m.def("stop() -> ()", stop);
  m.def("new_step() -> ()", new_step);
  m.def("pull() -> (Tensor, Tensor, Tensor, Tensor, str[])", pull);
  m.def("reset() -> ()", reset);
  m.def("measure(Tensor t) -> float[]", measure_one);
  m.def("slow_count() -> int", slow_count);
  m.def("cache_size() -> int", cache_size);
  m.def("dtype_code(Tensor t) -> int", dtype_code);
}
