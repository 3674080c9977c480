//===- data.cpp - .npy and IDX readers, datasets, Fashion-MNIST -----------===//

#include "tooling/data.h"
#include "core/status.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

namespace otc {

int64_t Array::numel() const { return shapeNumel(shape); }

namespace {

[[noreturn]] void dataError(const std::string &path, const std::string &what,
                            otc_status_code_t code = OTC_INVALID_ARGUMENT) {
  throw Error(code, "'" + path + "': " + what);
}

/// The bytes of `a`'s data at `elem` bytes an element, refused with a
/// message when a header's shape makes that count overflow (a shape such as
/// (2^62, 1, 28, 28) would otherwise wrap around and pass the size check).
size_t dataBytes(const std::string &path, const Array &a, size_t elem) {
  uint64_t n = elem;
  for (int64_t d : a.shape)
    if (d < 0 || __builtin_mul_overflow(n, uint64_t(d), &n))
      dataError(path,
                "shape " + shapeString(a.shape) +
                    " is too large: its byte count overflows",
                OTC_DATA_LOSS);
  if (n > uint64_t(std::numeric_limits<int64_t>::max()))
    dataError(path, "shape " + shapeString(a.shape) + " is too large",
              OTC_DATA_LOSS);
  return size_t(n);
}

std::string readWholeFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(OTC_NOT_FOUND,
                "cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    throw Error(OTC_IO_ERROR, "cannot read '" + path + "'");
  return ss.str();
}

// Extracts the value after 'key': in a .npy header dict.
std::string headerValue(const std::string &header, const std::string &key,
                        const std::string &path) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos)
    dataError(path, "npy header has no '" + key + "'", OTC_DATA_LOSS);
  size_t colon = header.find(':', k);
  if (colon == std::string::npos)
    dataError(path, "malformed npy header", OTC_DATA_LOSS);
  size_t begin = header.find_first_not_of(" ", colon + 1);
  if (begin == std::string::npos)
    dataError(path, "malformed npy header", OTC_DATA_LOSS);
  size_t end;
  if (header[begin] == '(') {
    end = header.find(')', begin);
    if (end == std::string::npos)
      dataError(path, "malformed npy shape", OTC_DATA_LOSS);
    return header.substr(begin, end - begin + 1);
  }
  if (header[begin] == '\'' || header[begin] == '"') {
    end = header.find(header[begin], begin + 1);
    if (end == std::string::npos)
      dataError(path, "malformed npy header", OTC_DATA_LOSS);
    return header.substr(begin + 1, end - begin - 1);
  }
  end = header.find_first_of(",}", begin);
  return header.substr(begin, end - begin);
}

template <typename T> struct Tag { using type = T; };

// Calls fn(Tag<C type>) for a dtype; one generic loop serves every pair.
template <typename Fn> void visitDType(DType dtype, Fn &&fn) {
  switch (dtype) {
  case DType::F32:
    return fn(Tag<float>());
  case DType::F64:
    return fn(Tag<double>());
  case DType::I64:
    return fn(Tag<int64_t>());
  case DType::I32:
    return fn(Tag<int32_t>());
  case DType::U8:
    return fn(Tag<uint8_t>());
  case DType::Bool:
    return fn(Tag<bool>());
  case DType::I8:
    return fn(Tag<int8_t>());
  case DType::I16:
    return fn(Tag<int16_t>());
  case DType::U16:
    return fn(Tag<uint16_t>());
  case DType::U32:
    return fn(Tag<uint32_t>());
  case DType::U64:
    return fn(Tag<uint64_t>());
  case DType::F16: // storage types: convertArray refuses them
  case DType::BF16:
    return;
  }
}

template <typename Dst, typename Src> Dst castValue(Src v) {
  if constexpr (std::is_same_v<Dst, bool>)
    return v != Src(0);
  else
    return static_cast<Dst>(v);
}

} // namespace

Array readNpy(const std::string &path) {
  std::string bytes = readWholeFile(path);
  static const char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0)
    dataError(path, "not a .npy file (bad magic)", OTC_DATA_LOSS);
  int major = uint8_t(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      dataError(path, "truncated npy header", OTC_DATA_LOSS);
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    dataError(path, "unsupported .npy version " + std::to_string(major));
  }
  if (bytes.size() < headerStart + headerLen)
    dataError(path, "truncated npy header", OTC_DATA_LOSS);
  std::string header = bytes.substr(headerStart, headerLen);

  std::string descr = headerValue(header, "descr", path);
  Array a;
  // One-byte types may be written with either byte-order mark.
  if (descr.size() == 3 && descr[0] == '<' && descr[2] == '1')
    descr[0] = '|';
  std::string known;
  bool isKnown = false;
  for (DType d : {DType::F32, DType::F64, DType::F16, DType::I64, DType::I32,
                  DType::I16, DType::I8, DType::U64, DType::U32, DType::U16,
                  DType::U8, DType::Bool}) {
    known += std::string(known.empty() ? "" : ", ") + dtypeInfo(d).npy;
    if (descr == dtypeInfo(d).npy && !isKnown) {
      a.dtype = d;
      isKnown = true;
    }
  }
  if (!isKnown)
    dataError(path, "unsupported npy dtype '" + descr +
                        "' (supported: " + known + "; little-endian only)");
  std::string fortran = headerValue(header, "fortran_order", path);
  if (fortran.find("True") != std::string::npos)
    dataError(path, "fortran_order arrays are not supported; save a "
                    "C-ordered array (numpy.ascontiguousarray)");
  std::string shape = headerValue(header, "shape", path);
  if (shape.empty() || shape[0] != '(')
    dataError(path, "npy header: shape '" + shape + "' is not a tuple",
              OTC_DATA_LOSS);
  std::string digits;
  for (char c : shape.substr(1)) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
    } else if (!digits.empty()) {
      errno = 0;
      long long d = std::strtoll(digits.c_str(), nullptr, 10);
      if (errno == ERANGE)
        dataError(path, "npy shape extent " + digits + " is too large",
                  OTC_DATA_LOSS);
      a.shape.push_back(d);
      digits.clear();
    }
  }
  size_t dataStart = headerStart + headerLen;
  size_t expected = dataBytes(path, a, dtypeSize(a.dtype));
  size_t found = bytes.size() - dataStart;
  if (found < expected)
    dataError(path,
              "truncated: expected " + std::to_string(expected) +
                  " data bytes for shape " + shapeString(a.shape) + ", found " +
                  std::to_string(found),
              OTC_DATA_LOSS);
  a.data.assign(bytes.begin() + dataStart,
                bytes.begin() + dataStart + expected);
  // numpy writes bools as bytes 0 and 1; any other byte is still "true",
  // and only 0 and 1 are valid bools where the data is read as such.
  if (a.dtype == DType::Bool)
    for (uint8_t &b : a.data)
      b = b != 0;
  return a;
}

void writeNpy(const std::string &path, const Array &a) {
  const char *descr = dtypeInfo(a.dtype).npy;
  std::string shape = "(";
  for (int64_t d : a.shape)
    shape += std::to_string(d) + ",";
  if (a.shape.size() > 1)
    shape.pop_back();
  shape += ")";
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts at a multiple of 64, as numpy does.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw Error(OTC_IO_ERROR, "cannot write '" + path + "'");
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = uint16_t(header.size());
  char lenBytes[2] = {char(len & 0xff), char(len >> 8)};
  out.write(lenBytes, 2);
  out << header;
  out.write(reinterpret_cast<const char *>(a.data.data()),
            std::streamsize(a.data.size()));
  if (!out)
    throw Error(OTC_IO_ERROR, "cannot write '" + path + "'");
}

Array readIdx(const std::string &path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw Error(OTC_NOT_FOUND,
                "cannot open '" + path + "': " + std::strerror(errno));
  std::string bytes;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0)
    bytes.append(buf, size_t(n));
  int err = 0;
  const char *why = n < 0 ? gzerror(f, &err) : nullptr;
  std::string whyText = why ? why : "";
  gzclose(f);
  if (n < 0)
    dataError(path, "corrupt gzip stream: " + whyText, OTC_DATA_LOSS);

  auto u8 = [&](size_t i) { return uint8_t(bytes[i]); };
  if (bytes.size() < 4 || u8(0) != 0 || u8(1) != 0)
    dataError(path, "not an IDX file (bad magic)", OTC_DATA_LOSS);
  int ndims = u8(3);
  if (ndims == 0 || bytes.size() < 4 + 4 * size_t(ndims))
    dataError(path, "truncated IDX header", OTC_DATA_LOSS);
  Array a;
  for (int i = 0; i < ndims; ++i) {
    size_t p = 4 + 4 * size_t(i);
    a.shape.push_back(int64_t(uint32_t(u8(p)) << 24 |
                              uint32_t(u8(p + 1)) << 16 |
                              uint32_t(u8(p + 2)) << 8 | u8(p + 3)));
  }
  size_t elem;
  DType fileType;
  switch (u8(2)) {
  case 0x08:
    fileType = DType::U8, elem = 1;
    break;
  case 0x09: // int8, widened below
    fileType = DType::I32, elem = 1;
    break;
  case 0x0B: // int16, widened below
    fileType = DType::I32, elem = 2;
    break;
  case 0x0C:
    fileType = DType::I32, elem = 4;
    break;
  case 0x0D:
    fileType = DType::F32, elem = 4;
    break;
  case 0x0E:
    fileType = DType::F64, elem = 8;
    break;
  default:
    dataError(path, "unknown IDX element type 0x" + std::to_string(int(u8(2))),
              OTC_DATA_LOSS);
  }
  size_t start = 4 + 4 * size_t(ndims);
  size_t expected = dataBytes(path, a, elem);
  dataBytes(path, a, dtypeSize(fileType)); // the widened copy's size too
  size_t found = bytes.size() - start;
  if (found != expected)
    dataError(path,
              (found < expected ? "truncated: expected "
                                : "size mismatch: expected ") +
                  std::to_string(expected) + " data bytes for shape " +
                  shapeString(a.shape) + ", found " + std::to_string(found),
              OTC_DATA_LOSS);
  a.dtype = fileType;
  a.data.resize(size_t(a.numel()) * dtypeSize(fileType));
  const uint8_t *src = reinterpret_cast<const uint8_t *>(bytes.data()) + start;
  // IDX is big-endian; widen narrow ints and swap into host order.
  for (int64_t i = 0; i < a.numel(); ++i) {
    const uint8_t *p = src + size_t(i) * elem;
    if (elem == 1 && fileType == DType::U8) {
      a.data[size_t(i)] = p[0];
      continue;
    }
    uint64_t v = 0;
    for (size_t b = 0; b < elem; ++b)
      v = v << 8 | p[b];
    uint8_t *dst = a.data.data() + size_t(i) * dtypeSize(fileType);
    if (u8(2) == 0x09 || u8(2) == 0x0B) {
      int32_t s = elem == 1 ? int32_t(int8_t(v)) : int32_t(int16_t(v));
      std::memcpy(dst, &s, 4);
    } else if (elem == 4) {
      uint32_t w = uint32_t(v);
      std::memcpy(dst, &w, 4);
    } else {
      std::memcpy(dst, &v, 8);
    }
  }
  return a;
}

Array readArray(const std::string &path) {
  auto endsWith = [&](const char *s) {
    size_t n = std::strlen(s);
    return path.size() >= n && path.compare(path.size() - n, n, s) == 0;
  };
  return endsWith(".npy") ? readNpy(path) : readIdx(path);
}

std::vector<uint8_t> convertArray(const Array &a, DType dtype) {
  if (a.dtype == dtype)
    return a.data;
  for (DType d : {a.dtype, dtype})
    if (d == DType::F16 || d == DType::BF16)
      throw Error(OTC_INVALID_ARGUMENT,
                  std::string("cannot convert ") + dtypeName(a.dtype) +
                      " data to " + dtypeName(dtype) +
                      " (f16 and bf16 data must be given as such)");
  std::vector<uint8_t> out(size_t(a.numel()) * dtypeSize(dtype));
  visitDType(a.dtype, [&](auto srcTag) {
    using Src = typename decltype(srcTag)::type;
    visitDType(dtype, [&](auto dstTag) {
      using Dst = typename decltype(dstTag)::type;
      const Src *src = reinterpret_cast<const Src *>(a.data.data());
      Dst *dst = reinterpret_cast<Dst *>(out.data());
      for (int64_t i = 0, n = a.numel(); i < n; ++i)
        dst[i] = castValue<Dst>(src[i]);
    });
  });
  return out;
}

int64_t InputSpec::numel() const { return shapeNumel(shape); }

int64_t InputSpec::sampleNumel() const { return shapeNumel(shape, 1); }

std::vector<InputSpec> programInputs(const otc_program_t *program) {
  std::vector<InputSpec> inputs;
  for (int64_t i = 0, n = otc_program_input_count(program); i < n; ++i) {
    otc_tensor_info_t info;
    throwIfError(otc_program_input(program, i, &info));
    InputSpec in;
    in.name = info.name;
    in.role = info.role;
    in.dtype = DType(int(info.dtype)); // the same numbering (dtype.cpp)
    in.shape.assign(info.shape, info.shape + info.rank);
    inputs.push_back(std::move(in));
  }
  return inputs;
}

const InputSpec *inputWithRole(const std::vector<InputSpec> &inputs,
                               const std::string &role) {
  for (const InputSpec &in : inputs)
    if (in.role == role)
      return &in;
  return nullptr;
}

Dataset Dataset::bind(const std::vector<InputSpec> &inputs,
                      std::map<std::string, Array> arrays,
                      const std::map<std::string, std::string> &sources) {
  auto source = [&](const std::string &name) {
    auto it = sources.find(name);
    return it == sources.end() ? std::string("<memory>") : it->second;
  };
  for (const auto &[name, array] : arrays)
    if (std::none_of(inputs.begin(), inputs.end(),
                     [&](const InputSpec &in) { return in.name == name; })) {
      std::string known;
      for (const InputSpec &in : inputs)
        known += (known.empty() ? "" : ", ") + in.name;
      throw Error(OTC_INVALID_ARGUMENT,
                  "unknown input '" + name + "' (file '" + source(name) +
                      "'); the program's inputs are: " + known);
    }
  Dataset ds;
  std::string first;
  for (const InputSpec &in : inputs) {
    auto it = arrays.find(in.name);
    if (it == arrays.end())
      throw Error(OTC_INVALID_ARGUMENT, "no data for input '" + in.name + "' " +
                                            shapeString(in.shape) +
                                            " (give --data " + in.name +
                                            "=FILE)");
    const Array &a = it->second;
    int64_t perSample = 1;
    for (size_t i = 1; i < a.shape.size(); ++i)
      perSample *= a.shape[i];
    if (a.shape.empty() || perSample != in.sampleNumel())
      throw Error(OTC_INVALID_ARGUMENT,
                  "'" + source(in.name) + "' for input '" + in.name +
                      "' has shape " + shapeString(a.shape) +
                      " but the input's shape is " + shapeString(in.shape) +
                      " (per sample " + std::to_string(in.sampleNumel()) +
                      " elements, the file has " + std::to_string(perSample) +
                      ")");
    if (ds.columns_.empty()) {
      ds.numSamples_ = a.shape[0];
      first = in.name;
    } else if (a.shape[0] != ds.numSamples_) {
      throw Error(OTC_INVALID_ARGUMENT,
                  "input '" + in.name + "' ('" + source(in.name) + "') has " +
                      std::to_string(a.shape[0]) + " samples but '" + first +
                      "' ('" + source(first) + "') has " +
                      std::to_string(ds.numSamples_));
    }
    Column c;
    c.input = in;
    c.sampleBytes = size_t(in.sampleNumel()) * dtypeSize(in.dtype);
    c.data = convertArray(a, in.dtype);
    c.source = source(in.name);
    ds.columns_.push_back(std::move(c));
  }
  return ds;
}

void Dataset::gather(size_t c, const std::vector<int64_t> &indices,
                     uint8_t *out) const {
  const Column &col = columns_.at(c);
  for (size_t i = 0; i < indices.size(); ++i) {
    uint8_t *dst = out + i * col.sampleBytes;
    if (indices[i] < 0)
      std::memset(dst, 0, col.sampleBytes);
    else
      std::memcpy(dst, col.data.data() + size_t(indices[i]) * col.sampleBytes,
                  col.sampleBytes);
  }
}

FashionMnist loadFashionMnist(const std::vector<InputSpec> &inputs,
                              std::string dir) {
  if (dir.empty()) {
    const char *env = std::getenv("OTC_DATASET_DIR");
    dir = env && *env ? env : "/usr/share/datasets/fashion-mnist";
  }
  const InputSpec *data = inputWithRole(inputs, "data");
  const InputSpec *label = inputWithRole(inputs, "label");
  if (!data || !label)
    throw Error(OTC_INVALID_ARGUMENT,
                "--dataset fashion-mnist needs a program with one input of "
                "role \"data\" and one of role \"label\" (compile with "
                "--loss cross-entropy --label NAME)");
  if (inputs.size() != 2)
    throw Error(OTC_INVALID_ARGUMENT,
                "--dataset fashion-mnist binds exactly two inputs (images and "
                "labels) but the program has " +
                    std::to_string(inputs.size()));
  FashionMnist fm;
  auto images = [&](const char *split) {
    std::string path = dir + "/" + split + "-images-idx3-ubyte.gz";
    Array a = readIdx(path);
    if (a.dtype != DType::U8 || a.shape.size() != 3)
      dataError(path, "expected uint8 images [N, 28, 28], found " +
                          shapeString(a.shape));
    return std::make_pair(path, a);
  };
  auto [trainPath, trainImages] = images("train");
  auto [evalPath, evalImages] = images("t10k");
  // Mean and std of the training pixels (scaled to [0, 1]).
  double sum = 0, sumSq = 0;
  for (uint8_t v : trainImages.data) {
    double x = v / 255.0;
    sum += x;
    sumSq += x * x;
  }
  double n = double(trainImages.data.size());
  fm.mean = n ? sum / n : 0;
  fm.std = n ? std::sqrt(std::max(0.0, sumSq / n - fm.mean * fm.mean)) : 1;
  if (fm.std <= 0)
    fm.std = 1;
  auto normalize = [&](const Array &u8) {
    Array f;
    f.dtype = DType::F32;
    f.shape = u8.shape;
    f.data.resize(u8.data.size() * 4);
    float *dst = reinterpret_cast<float *>(f.data.data());
    for (size_t i = 0; i < u8.data.size(); ++i)
      dst[i] = float((u8.data[i] / 255.0 - fm.mean) / fm.std);
    return f;
  };
  auto split = [&](const char *name, const std::string &imagePath,
                   const Array &imgs) {
    std::string labelPath = dir + "/" + name + "-labels-idx1-ubyte.gz";
    std::map<std::string, Array> arrays;
    arrays[data->name] = normalize(imgs);
    arrays[label->name] = readIdx(labelPath);
    std::map<std::string, std::string> sources = {{data->name, imagePath},
                                                  {label->name, labelPath}};
    return Dataset::bind(inputs, std::move(arrays), sources);
  };
  fm.train = split("train", trainPath, trainImages);
  fm.eval = split("t10k", evalPath, evalImages);
  return fm;
}

} // namespace otc
