//===- tensorboard_test.cpp - TensorBoard event files ---------------------===//
//
// The frames are read back here by an independent decoder of TFRecord and
// the Event fields; integration.tensorboard reads whole runs with
// TensorBoard's own reader.
//
//===----------------------------------------------------------------------===//

#include "core/status.h"
#include "core/test_fixture.h"
#include "tooling/tensorboard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <vector>

using namespace otc;

namespace {

// The check value of CRC-32C (RFC 3720's test vector).
TEST(TensorBoard, Crc32cCheckValue) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
}

uint32_t masked(const std::string &s) {
  uint32_t c = crc32c(s.data(), s.size());
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

struct Event {
  double wallTime = 0;
  int64_t step = -1;
  std::string fileVersion, tag;
  float value = NAN;
};

uint64_t varint(const std::string &s, size_t &i) {
  uint64_t v = 0;
  for (int shift = 0; i < s.size(); shift += 7) {
    uint8_t b = uint8_t(s[i++]);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80))
      break;
  }
  return v;
}

// Only the fields the writer produces; anything else fails the test.
void parseMessage(const std::string &s, Event &e, int depth) {
  size_t i = 0;
  while (i < s.size()) {
    uint64_t k = varint(s, i);
    int field = int(k >> 3), type = int(k & 7);
    if (type == 2) {
      size_t n = size_t(varint(s, i));
      ASSERT_LE(i + n, s.size());
      std::string sub = s.substr(i, n);
      i += n;
      if (depth == 0 && field == 3)
        e.fileVersion = sub;
      else if (depth == 0 && field == 5)
        parseMessage(sub, e, 1); // Summary
      else if (depth == 1 && field == 1)
        parseMessage(sub, e, 2); // Summary.Value
      else if (depth == 2 && field == 1)
        e.tag = sub;
      else
        FAIL() << "unexpected field " << field << " at depth " << depth;
    } else if (type == 1 && depth == 0 && field == 1) {
      std::memcpy(&e.wallTime, s.data() + i, 8);
      i += 8;
    } else if (type == 0 && depth == 0 && field == 2) {
      e.step = int64_t(varint(s, i));
    } else if (type == 5 && depth == 2 && field == 2) {
      std::memcpy(&e.value, s.data() + i, 4);
      i += 4;
    } else {
      FAIL() << "unexpected field " << field << " type " << type;
    }
  }
}

std::vector<Event> readEvents(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  std::vector<Event> events;
  size_t i = 0;
  while (i + 12 <= bytes.size()) {
    uint64_t n;
    uint32_t lenCrc, dataCrc;
    std::memcpy(&n, bytes.data() + i, 8);
    std::memcpy(&lenCrc, bytes.data() + i + 8, 4);
    EXPECT_EQ(lenCrc, masked(bytes.substr(i, 8)));
    EXPECT_LE(i + 16 + n, bytes.size());
    std::string data = bytes.substr(i + 12, size_t(n));
    std::memcpy(&dataCrc, bytes.data() + i + 12 + n, 4);
    EXPECT_EQ(dataCrc, masked(data));
    Event e;
    parseMessage(data, e, 0);
    events.push_back(e);
    i += 16 + size_t(n);
  }
  EXPECT_EQ(i, bytes.size()) << "trailing bytes";
  return events;
}

TEST(TensorBoard, EventsReadBack) {
  std::string dir = otc::testing::makeTempDir("otc-tensorboard-test");
  ASSERT_FALSE(dir.empty());
  EventFileWriter w;
  w.open(dir);
  ASSERT_TRUE(w.isOpen());
  EXPECT_NE(w.path().find("/events.out.tfevents."), std::string::npos);
  w.scalar("train/loss", 1, 2.5);
  w.scalar("train/lr", 300, 1e-3);
  w.scalar("eval/accuracy", 1LL << 40, 0.875);
  w.close();
  std::vector<Event> ev = readEvents(w.path());
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].fileVersion, "brain.Event:2");
  EXPECT_GT(ev[0].wallTime, 1.6e9); // seconds since 1970, after 2020
  EXPECT_EQ(ev[1].tag, "train/loss");
  EXPECT_EQ(ev[1].step, 1);
  EXPECT_EQ(ev[1].value, 2.5f);
  EXPECT_EQ(ev[2].tag, "train/lr");
  EXPECT_EQ(ev[2].step, 300);
  EXPECT_EQ(ev[2].value, 1e-3f);
  EXPECT_EQ(ev[3].step, 1LL << 40);
  EXPECT_EQ(ev[3].value, 0.875f);
  std::string cmd = "rm -rf '" + dir + "'";
  (void)std::system(cmd.c_str());
}

TEST(TensorBoard, UnwritableFolderIsAnError) {
  EventFileWriter w;
  try {
    w.open("/nonexistent-otc-folder");
    FAIL() << "opened an event file in a missing folder";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-otc-folder/events"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
