//===- data.h - Data files and in-memory datasets ---------------*- C++ -*-===//
//
// Readers for .npy (v1/v2, C order, little-endian) and IDX (optionally
// gzip-compressed) files, conversion to a program input's dtype, and the
// dataset that binds one array per program input.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_TOOLING_DATA_H
#define OTC_RUNTIME_TOOLING_DATA_H

#include "core/dtype.h"
#include "otc/runtime.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace otc {

/// A dense row-major array read from a file.
struct Array {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  int64_t numel() const;
};

Array readNpy(const std::string &path);
void writeNpy(const std::string &path, const Array &array);
Array readIdx(const std::string &path);
/// Picks the reader from the file name (.npy, else IDX with optional .gz).
Array readArray(const std::string &path);

/// Converts the elements of `array` to `dtype` (numeric cast; bool is 0/1).
std::vector<uint8_t> convertArray(const Array &array, DType dtype);

/// A program input as the C API describes it (otc_program_input).
struct InputSpec {
  std::string name, role;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  int64_t numel() const;
  /// Elements per sample: the product of shape[1:].
  int64_t sampleNumel() const;
  size_t bytes() const { return size_t(numel()) * dtypeSize(dtype); }
};

/// The inputs of `program` in the manifest's order.
std::vector<InputSpec> programInputs(const otc_program_t *program);
/// The first of `inputs` with role `role`; NULL if none.
const InputSpec *inputWithRole(const std::vector<InputSpec> &inputs,
                               const std::string &role);

/// One array per program input, all with the same number of samples.
class Dataset {
public:
  struct Column {
    InputSpec input;
    std::vector<uint8_t> data; // in the input's dtype
    size_t sampleBytes = 0;
    std::string source; // the file, for messages
  };

  /// Binds `arrays` (input name -> array, `sources` name -> file for
  /// messages) to the program's `inputs`; every input needs an array.
  static Dataset bind(const std::vector<InputSpec> &inputs,
                      std::map<std::string, Array> arrays,
                      const std::map<std::string, std::string> &sources);

  int64_t size() const { return numSamples_; }
  const std::vector<Column> &columns() const { return columns_; }
  /// Copies samples `indices` of column `c` into `out` (sample after
  /// sample); an index of -1 leaves zeros (padding).
  void gather(size_t c, const std::vector<int64_t> &indices,
              uint8_t *out) const;

private:
  int64_t numSamples_ = 0;
  std::vector<Column> columns_;
};

struct FashionMnist {
  Dataset train, eval;
  double mean = 0, std = 1;
};

/// Reads Fashion-MNIST from `dir` (OTC_DATASET_DIR or the Debian package's
/// folder when empty) into the inputs with roles "data" and "label",
/// normalised with the training images' mean and standard deviation.
FashionMnist loadFashionMnist(const std::vector<InputSpec> &inputs,
                              std::string dir);

} // namespace otc

#endif // OTC_RUNTIME_TOOLING_DATA_H
