//===- tensorboard.h - TensorBoard event files of scalars -------*- C++ -*-===//
//
// The file TensorBoard reads (events.out.tfevents.*): TFRecord framing
// (length, masked CRC32C of the length, an Event message, masked CRC32C of
// the message) around Event protos holding one scalar Summary value each,
// encoded by hand: the runtime does not carry TensorFlow's protos.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_TOOLING_TENSORBOARD_H
#define OTC_RUNTIME_TOOLING_TENSORBOARD_H

#include <cstdint>
#include <cstdio>
#include <string>

namespace otc {

/// CRC-32C (Castagnoli) of `n` bytes, as TFRecord frames use it.
uint32_t crc32c(const void *data, size_t n);

class EventFileWriter {
public:
  EventFileWriter() = default;
  EventFileWriter(const EventFileWriter &) = delete;
  EventFileWriter &operator=(const EventFileWriter &) = delete;
  ~EventFileWriter();

  /// Creates a new event file in the existing folder `dir` (a resumed run
  /// adds a file; TensorBoard reads every one) and writes its version event.
  void open(const std::string &dir);
  bool isOpen() const { return file_ != nullptr; }
  const std::string &path() const { return path_; }
  /// One scalar at `step`, flushed: a crash loses nothing written.
  /// Non-finite values are written as they are (TensorBoard shows them).
  void scalar(const std::string &tag, int64_t step, double value);
  /// Closes the file; throws an Error if what was written did not reach it.
  void close();

private:
  void writeEvent(const std::string &event);
  std::FILE *file_ = nullptr;
  std::string path_;
};

} // namespace otc

#endif // OTC_RUNTIME_TOOLING_TENSORBOARD_H
