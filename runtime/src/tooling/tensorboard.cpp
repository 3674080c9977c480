//===- tensorboard.cpp - TensorBoard event files of scalars ---------------===//

#include "tooling/tensorboard.h"
#include "core/status.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace otc {

namespace {

std::array<uint32_t, 256> crcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1; // reflected Castagnoli
    t[i] = c;
  }
  return t;
}

/// TFRecord's masked CRC: a CRC of data that holds CRCs stays checkable.
uint32_t maskedCrc(const void *data, size_t n) {
  uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

// Protocol-buffer wire format, the few field kinds an Event needs.
void varint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}
void key(std::string &out, int field, int wireType) {
  varint(out, uint64_t(field) << 3 | uint64_t(wireType));
}
template <typename T> void fixed(std::string &out, int field, T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "fixed32 or fixed64");
  key(out, field, sizeof(T) == 8 ? 1 : 5);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T)); // little-endian hosts only (x86, arm)
  out.append(bytes, sizeof(T));
}
void bytesField(std::string &out, int field, const std::string &v) {
  key(out, field, 2);
  varint(out, v.size());
  out += v;
}

double wallTime() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// tensorflow/core/util/event.proto: Event { double wall_time = 1;
// int64 step = 2; string file_version = 3; Summary summary = 5; }
// summary.proto: Summary { repeated Value value = 1; }
// Value { string tag = 1; float simple_value = 2; }
std::string eventHeader(int64_t step) {
  std::string e;
  fixed(e, 1, wallTime());
  key(e, 2, 0);
  varint(e, uint64_t(step));
  return e;
}

} // namespace

uint32_t crc32c(const void *data, size_t n) {
  static const std::array<uint32_t, 256> kTable = crcTable();
  const auto *p = static_cast<const uint8_t *>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i)
    c = kTable[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

EventFileWriter::~EventFileWriter() {
  if (file_)
    std::fclose(file_);
}

void EventFileWriter::open(const std::string &dir) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  // TensorBoard's own naming: it reads files whose name holds "tfevents".
  path_ = dir + "/events.out.tfevents." + std::to_string(int64_t(wallTime())) +
          "." + host + "." + std::to_string(getpid()) + ".otc";
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_)
    throw Error(OTC_IO_ERROR, "cannot open the TensorBoard event file '" +
                                  path_ + "': " + std::strerror(errno));
  std::string e = eventHeader(0);
  bytesField(e, 3, "brain.Event:2");
  writeEvent(e);
}

void EventFileWriter::scalar(const std::string &tag, int64_t step,
                             double value) {
  if (!file_)
    return;
  std::string v;
  bytesField(v, 1, tag);
  fixed(v, 2, float(value));
  std::string summary;
  bytesField(summary, 1, v);
  std::string e = eventHeader(step);
  bytesField(e, 5, summary);
  writeEvent(e);
}

void EventFileWriter::writeEvent(const std::string &event) {
  std::string frame;
  const uint64_t n = event.size();
  char len[8];
  std::memcpy(len, &n, 8);
  frame.append(len, 8);
  const uint32_t lenCrc = maskedCrc(len, 8),
                 dataCrc = maskedCrc(event.data(), n);
  frame.append(reinterpret_cast<const char *>(&lenCrc), 4);
  frame += event;
  frame.append(reinterpret_cast<const char *>(&dataCrc), 4);
  if (std::fwrite(frame.data(), 1, frame.size(), file_) != frame.size() ||
      std::fflush(file_) != 0)
    throw Error(OTC_IO_ERROR, "cannot write the TensorBoard event file '" +
                                  path_ + "': " + std::strerror(errno));
}

void EventFileWriter::close() {
  if (!file_)
    return;
  std::FILE *f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0)
    throw Error(OTC_IO_ERROR, "cannot write the TensorBoard event file '" +
                                  path_ + "': " + std::strerror(errno));
}

} // namespace otc
