//===- data_test.cpp - .npy and IDX readers, datasets ---------------------===//

#include "core/program.h"
#include "core/status.h"
#include "tooling/data.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>

using namespace otc;

namespace {

class DataTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "otc-data-test-XXXXXX")
            .string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir + "'";
    (void)std::system(cmd.c_str());
  }
  std::string path(const std::string &name) { return dir + "/" + name; }
  void writeBytes(const std::string &p, const std::string &bytes) {
    std::ofstream out(p, std::ios::binary);
    out << bytes;
  }
  std::string npyBytes(int major, const std::string &header,
                       const std::string &data) {
    std::string h = header;
    size_t pre = major == 1 ? 10 : 12;
    h.append((64 - (pre + h.size() + 1) % 64) % 64, ' ');
    h += '\n';
    std::string out = "\x93NUMPY";
    out += char(major);
    out += char(0);
    uint32_t len = uint32_t(h.size());
    out += char(len & 0xff);
    out += char((len >> 8) & 0xff);
    if (major != 1) {
      out += char((len >> 16) & 0xff);
      out += char((len >> 24) & 0xff);
    }
    return out + h + data;
  }
  template <typename T> std::string raw(std::vector<T> v) {
    return std::string(reinterpret_cast<const char *>(v.data()),
                       v.size() * sizeof(T));
  }
  std::string errorOf(const std::function<void()> &fn) {
    try {
      fn();
    } catch (const Error &e) {
      return e.what();
    }
    return "";
  }
  std::string dir;
};

TEST_F(DataTest, NpyAllDtypesRoundTrip) {
  struct Case {
    DType dtype;
    size_t elem;
  } cases[] = {{DType::F32, 4}, {DType::F64, 8}, {DType::U8, 1},
               {DType::I32, 4}, {DType::I64, 8}, {DType::Bool, 1},
               {DType::I8, 1},  {DType::I16, 2}, {DType::U16, 2},
               {DType::U32, 4}, {DType::U64, 8}, {DType::F16, 2}};
  for (const Case &c : cases) {
    Array a;
    a.dtype = c.dtype;
    a.shape = {3, 2};
    a.data.resize(6 * c.elem);
    for (size_t i = 0; i < a.data.size(); ++i)
      a.data[i] = uint8_t(c.dtype == DType::Bool ? i % 2 : i * 7 + 1);
    std::string p = path(std::string("a_") + dtypeName(c.dtype) + ".npy");
    writeNpy(p, a);
    Array b = readNpy(p);
    EXPECT_EQ(b.dtype, c.dtype) << dtypeName(c.dtype);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
  }
}

TEST_F(DataTest, NpyV1AndV2Headers) {
  std::string data = raw<float>({1, 2, 3, 4});
  writeBytes(path("v1.npy"),
             npyBytes(1,
                      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, "
                      "2), }",
                      data));
  writeBytes(path("v2.npy"),
             npyBytes(2,
                      "{'descr': '<i8', 'fortran_order': False, 'shape': "
                      "(2,), }",
                      raw<int64_t>({-5, 9})));
  writeBytes(path("scalar.npy"),
             npyBytes(1,
                      "{'descr': '<f8', 'fortran_order': False, 'shape': "
                      "(), }",
                      raw<double>({2.5})));
  Array a = readNpy(path("v1.npy"));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(a.data.size(), 16u);
  float f[4];
  std::memcpy(f, a.data.data(), 16);
  EXPECT_EQ(f[3], 4.f);
  Array b = readNpy(path("v2.npy"));
  EXPECT_EQ(b.dtype, DType::I64);
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2}));
  Array s = readNpy(path("scalar.npy"));
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.numel(), 1);
}

TEST_F(DataTest, NpyErrors) {
  writeBytes(path("trunc.npy"),
             npyBytes(1,
                      "{'descr': '<f4', 'fortran_order': False, 'shape': (4, "
                      "4), }",
                      raw<float>({1, 2, 3})));
  std::string e = errorOf([&] { readNpy(path("trunc.npy")); });
  EXPECT_NE(e.find("truncated: expected 64 data bytes"), std::string::npos)
      << e;
  EXPECT_NE(e.find("trunc.npy"), std::string::npos) << e;

  writeBytes(path("fortran.npy"),
             npyBytes(1,
                      "{'descr': '<f4', 'fortran_order': True, 'shape': (2, "
                      "2), }",
                      raw<float>({1, 2, 3, 4})));
  e = errorOf([&] { readNpy(path("fortran.npy")); });
  EXPECT_NE(e.find("fortran_order"), std::string::npos) << e;

  writeBytes(path("complex.npy"),
             npyBytes(1,
                      "{'descr': '<c8', 'fortran_order': False, 'shape': "
                      "(1,), }",
                      "abcdefgh"));
  e = errorOf([&] { readNpy(path("complex.npy")); });
  EXPECT_NE(e.find("unsupported npy dtype '<c8'"), std::string::npos) << e;

  writeBytes(path("big.npy"),
             npyBytes(1,
                      "{'descr': '>f4', 'fortran_order': False, 'shape': "
                      "(1,), }",
                      "abcd"));
  e = errorOf([&] { readNpy(path("big.npy")); });
  EXPECT_NE(e.find("'>f4'"), std::string::npos) << e;

  writeBytes(path("junk.npy"), "not numpy at all");
  e = errorOf([&] { readNpy(path("junk.npy")); });
  EXPECT_NE(e.find("bad magic"), std::string::npos) << e;

  try {
    readNpy(path("missing.npy"));
    FAIL();
  } catch (const Error &err) {
    EXPECT_EQ(err.code(), OTC_NOT_FOUND);
    EXPECT_NE(std::string(err.what()).find("missing.npy"), std::string::npos);
  }
}

TEST_F(DataTest, NpyShapesWhoseSizeOverflowAreRefused) {
  // 2^62 * 784 elements of 4 bytes wrap around 2^64 to a small count.
  writeBytes(path("wrap.npy"),
             npyBytes(1,
                      "{'descr': '<f4', 'fortran_order': False, 'shape': "
                      "(4611686018427387904, 1, 28, 28), }",
                      raw<float>({1, 2, 3, 4})));
  std::string e = errorOf([&] { readNpy(path("wrap.npy")); });
  EXPECT_NE(e.find("is too large"), std::string::npos) << e;
  EXPECT_NE(e.find("wrap.npy"), std::string::npos) << e;
  // An extent beyond int64.
  writeBytes(path("huge.npy"),
             npyBytes(1,
                      "{'descr': '<f4', 'fortran_order': False, 'shape': "
                      "(99999999999999999999,), }",
                      raw<float>({1})));
  e = errorOf([&] { readNpy(path("huge.npy")); });
  EXPECT_NE(e.find("99999999999999999999 is too large"), std::string::npos)
      << e;
}

std::string idxBytes(uint8_t type, std::vector<uint32_t> dims,
                     const std::string &data) {
  std::string out;
  out += char(0);
  out += char(0);
  out += char(type);
  out += char(dims.size());
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8)
      out += char((d >> s) & 0xff);
  return out + data;
}

TEST_F(DataTest, IdxPlainAndGzip) {
  std::string pixels;
  for (int i = 0; i < 2 * 3 * 4; ++i)
    pixels += char(i);
  std::string bytes = idxBytes(0x08, {2, 3, 4}, pixels);
  writeBytes(path("images-idx3-ubyte"), bytes);
  gzFile gz = gzopen(path("images-idx3-ubyte.gz").c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  gzwrite(gz, bytes.data(), unsigned(bytes.size()));
  gzclose(gz);
  for (const char *name : {"images-idx3-ubyte", "images-idx3-ubyte.gz"}) {
    Array a = readArray(path(name));
    EXPECT_EQ(a.dtype, DType::U8);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3, 4}));
    ASSERT_EQ(a.data.size(), 24u);
    EXPECT_EQ(a.data[23], 23);
  }
  // Big-endian int32 and float32 are converted to host order.
  std::string ints = {0,          0,          1,          2,
                      char(0xff), char(0xff), char(0xff), char(0xfe)};
  writeBytes(path("ints-idx1"), idxBytes(0x0C, {2}, ints));
  Array i = readIdx(path("ints-idx1"));
  int32_t v[2];
  std::memcpy(v, i.data.data(), 8);
  EXPECT_EQ(v[0], 258);
  EXPECT_EQ(v[1], -2);
}

TEST_F(DataTest, IdxErrors) {
  writeBytes(path("bad-magic"),
             std::string("\x01\x02\x08\x01", 4) + std::string(8, '\0'));
  EXPECT_NE(errorOf([&] { readIdx(path("bad-magic")); }).find("bad magic"),
            std::string::npos);
  writeBytes(path("short"), idxBytes(0x08, {10, 2}, "abc"));
  std::string e = errorOf([&] { readIdx(path("short")); });
  EXPECT_NE(e.find("truncated: expected 20 data bytes"), std::string::npos)
      << e;
  // Eight extents of 2^32 - 1: a byte count far past 2^64.
  writeBytes(path("wrap-idx"),
             idxBytes(0x0D, std::vector<uint32_t>(8, 0xffffffffu), "abcd"));
  e = errorOf([&] { readIdx(path("wrap-idx")); });
  EXPECT_NE(e.find("is too large"), std::string::npos) << e;
  writeBytes(path("type"), idxBytes(0x42, {1}, "a"));
  EXPECT_NE(errorOf([&] { readIdx(path("type")); }).find("element type"),
            std::string::npos);
}

TEST_F(DataTest, Convert) {
  Array a;
  a.dtype = DType::U8;
  a.shape = {3};
  a.data = {0, 7, 255};
  std::vector<uint8_t> f = convertArray(a, DType::F32);
  float fv[3];
  std::memcpy(fv, f.data(), 12);
  EXPECT_EQ(fv[2], 255.f);
  std::vector<uint8_t> l = convertArray(a, DType::I64);
  int64_t lv[3];
  std::memcpy(lv, l.data(), 24);
  EXPECT_EQ(lv[1], 7);
  std::vector<uint8_t> b = convertArray(a, DType::Bool);
  EXPECT_EQ(b, (std::vector<uint8_t>{0, 1, 1}));
  // Narrow integers wrap as numpy's astype; f16 data is refused.
  std::vector<uint8_t> s = convertArray(a, DType::I8);
  EXPECT_EQ(int8_t(s[2]), -1);
  std::vector<uint8_t> u = convertArray(a, DType::U16);
  uint16_t uv[3];
  std::memcpy(uv, u.data(), 6);
  EXPECT_EQ(uv[2], 255);
  EXPECT_NE(errorOf([&] {
              convertArray(a, DType::F16);
            }).find("cannot convert u8 data to f16"),
            std::string::npos);
}

// A parsed manifest's inputs, as programInputs reads them from a program.
std::vector<InputSpec> twoInputs() {
  Manifest m = parseManifest(
      R"({"otc_manifest_version":1,"world_size":1,"batch":4,"arena_bytes":4096,
      "inputs":[{"name":"x","dtype":"f32","shape":[4,2,3],"offset":0,
                 "role":"data"},
                {"name":"y","dtype":"i64","shape":[4],"offset":128,
                 "role":"label"}]})",
      4096);
  std::vector<InputSpec> inputs;
  for (const TensorSpec &t : m.inputs)
    inputs.push_back({t.name, t.role, t.dtype, t.shape});
  return inputs;
}

Array filled(DType dtype, std::vector<int64_t> shape) {
  Array a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.data.assign(size_t(a.numel()) * dtypeSize(dtype), 1);
  return a;
}

TEST_F(DataTest, DatasetBindsAndGathers) {
  std::vector<InputSpec> m = twoInputs();
  std::map<std::string, Array> arrays;
  arrays["x"] = filled(DType::U8, {10, 6}); // flat per sample is fine
  arrays["y"] = filled(DType::U8, {10});
  Dataset ds = Dataset::bind(m, arrays, {});
  EXPECT_EQ(ds.size(), 10);
  ASSERT_EQ(ds.columns().size(), 2u);
  EXPECT_EQ(ds.columns()[0].sampleBytes, 24u);
  std::vector<uint8_t> out(4 * 24);
  ds.gather(0, {0, 9, -1, 3}, out.data());
  float v;
  std::memcpy(&v, out.data(), 4);
  EXPECT_EQ(v, 1.f);
  std::memcpy(&v, out.data() + 2 * 24, 4);
  EXPECT_EQ(v, 0.f); // padding
}

TEST_F(DataTest, DatasetErrorsNameTheProblem) {
  std::vector<InputSpec> m = twoInputs();
  std::map<std::string, std::string> src = {{"x", "x.npy"}, {"y", "y.npy"}};
  std::map<std::string, Array> arrays;
  arrays["x"] = filled(DType::F32, {10, 5});
  arrays["y"] = filled(DType::I64, {10});
  std::string e = errorOf([&] { Dataset::bind(m, arrays, src); });
  EXPECT_NE(e.find("'x.npy' for input 'x' has shape [10, 5] but the input's "
                   "shape is [4, 2, 3]"),
            std::string::npos)
      << e;
  arrays["x"] = filled(DType::F32, {10, 2, 3});
  arrays["y"] = filled(DType::I64, {9});
  e = errorOf([&] { Dataset::bind(m, arrays, src); });
  EXPECT_NE(e.find("has 9 samples but 'x'"), std::string::npos) << e;
  arrays["y"] = filled(DType::I64, {10});
  arrays["z"] = filled(DType::I64, {10});
  e = errorOf([&] { Dataset::bind(m, arrays, src); });
  EXPECT_NE(e.find("unknown input 'z'"), std::string::npos) << e;
  arrays.erase("z");
  arrays.erase("y");
  e = errorOf([&] { Dataset::bind(m, arrays, src); });
  EXPECT_NE(e.find("no data for input 'y'"), std::string::npos) << e;
}

TEST(Manifest, ValidationErrors) {
  auto err = [](const std::string &json) {
    try {
      parseManifest(json, 0);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(err(R"({"otc_manifest_version":2})").find("version 2"),
            std::string::npos);
  EXPECT_NE(err(R"({"otc_manifest_version":1,"world_size":1,"batch":4,
      "arena_bytes":64,"params":[{"name":"w","dtype":"f32","shape":[100],
      "offset":0}]})")
                .find("does not fit in the arena"),
            std::string::npos);
  EXPECT_NE(err(R"({"otc_manifest_version":1,"world_size":1,"batch":4,
      "arena_bytes":64,"params":[{"name":"w","dtype":"c64","shape":[1],
      "offset":0}]})")
                .find("unknown dtype 'c64'"),
            std::string::npos);
  EXPECT_NE(err(R"({"otc_manifest_version":1,"world_size":1,"batch":4,
      "arena_bytes":64,"inputs":[{"name":"x","dtype":"f32","shape":[3],
      "offset":0}]})")
                .find("batch size 4"),
            std::string::npos);
  // Integer fields with a fraction are refused, not cut off; the
  // optimizer's hyperparameters and SDP's active fraction are real.
  EXPECT_EQ(err(R"({"otc_manifest_version":1,"world_size":1,"batch":3.7,
      "arena_bytes":64})"),
            "invalid program manifest: \"batch\" must be an integer, got 3.7");
  EXPECT_NE(err(R"({"otc_manifest_version":1,"world_size":1,"batch":4,
      "arena_bytes":64,"params":[{"name":"w","dtype":"f32","shape":[2.5],
      "offset":0}]})")
                .find("\"shape\" must be an integer, got 2.5"),
            std::string::npos);
  EXPECT_EQ(err(R"({"otc_manifest_version":1,"world_size":1,"batch":4.0,
      "arena_bytes":64,"optimizer":{"name":"sgd","lr":0.25}})"),
            "");
  // SDP owner groups: each world rank once, ascending (a member's slot in
  // the group's all-gather is its index).
  auto sdp = [](const std::string &groups) {
    return R"({"otc_manifest_version":1,"world_size":3,"batch":4,
      "arena_bytes":64,"sdp":{"mode":"block","masking":"forward",
      "active":0.5,"rank_variant":[0,1,2],"components":[],"groups":)" +
           groups + "}}";
  };
  EXPECT_EQ(err(sdp("[[0,2],[1]]")), "");
  for (const char *g : {"[[2,0]]", "[[0,0]]", "[[0,3]]", "[[-1,1]]"})
    EXPECT_NE(
        err(sdp(g)).find("sdp group 0 must list ranks of the world once, in "
                         "ascending order"),
        std::string::npos)
        << g;
}

} // namespace
