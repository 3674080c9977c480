//===- watchdog.cpp - Collective timeouts and peers that went away --------===//

#include "comm/watchdog.h"
#include "core/status.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

namespace otc {

namespace {

/// Probes and their answers: a NUL-terminated text of at most this size.
constexpr int kMessageBytes = 256;
constexpr int kProbeTag = 1, kAnswerTag = 2;
/// Identity records: host name, then the key that says "same machine and
/// pid namespace", then the pid.
constexpr int kHostBytes = 64, kKeyBytes = 176, kIdBytes = 256;
/// How often a long wait looks at its peers.
constexpr auto kLookEvery = std::chrono::milliseconds(50);

std::string firstLine(const char *path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string selfKey() {
  char ns[128] = {0};
  ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  return firstLine("/proc/sys/kernel/random/boot_id") + "|" +
         (n > 0 ? std::string(ns, size_t(n)) : std::string());
}

std::string ranks(const std::vector<std::string> &items) {
  std::string s;
  for (const std::string &i : items)
    s += (s.empty() ? "" : ", ") + i;
  return s;
}

} // namespace

void Watchdog::start(MPI_Comm world, int rank, int size) {
  rank_ = rank;
  size_ = size;
  if (MPI_Comm_dup(world, &control_) != MPI_SUCCESS)
    throw Error(OTC_UNAVAILABLE, "MPI_Comm_dup failed for the watchdog");
  MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);
  started_ = true;
  std::vector<char> mine(kIdBytes, 0), all(size_t(kIdBytes) * size_t(size));
  char host[kHostBytes] = {0};
  gethostname(host, sizeof host - 1);
  std::memcpy(mine.data(), host, std::strlen(host));
  std::string key = std::string(host) + "|" + selfKey();
  std::memcpy(mine.data() + kHostBytes, key.data(),
              std::min<size_t>(key.size(), kKeyBytes - 1));
  int32_t pid = int32_t(getpid());
  std::memcpy(mine.data() + kHostBytes + kKeyBytes, &pid, sizeof pid);
  if (MPI_Allgather(mine.data(), kIdBytes, MPI_BYTE, all.data(), kIdBytes,
                    MPI_BYTE, control_) != MPI_SUCCESS)
    throw Error(OTC_UNAVAILABLE, "the ranks could not exchange their process "
                                 "ids (MPI_Allgather failed)");
  peers_.resize(size_t(size));
  for (int r = 0; r < size; ++r) {
    const char *id = all.data() + size_t(r) * kIdBytes;
    peers_[size_t(r)].host.assign(id, strnlen(id, kHostBytes));
    peers_[size_t(r)].key.assign(id + kHostBytes,
                                 strnlen(id + kHostBytes, kKeyBytes));
    std::memcpy(&peers_[size_t(r)].pid, id + kHostBytes + kKeyBytes,
                sizeof(int32_t));
  }
}

void Watchdog::stop() {
  if (!started_)
    return;
  started_ = false;
  for (auto &[request, buffer] : sends_)
    MPI_Request_free(&request);
  sends_.clear();
  MPI_Comm_free(&control_);
}

void Watchdog::enterStep(int64_t step) {
  step_ = step;
  inStep_ = true;
  counts_.clear();
}

void Watchdog::leaveStep() {
  inStep_ = false;
  counts_.clear();
}

void Watchdog::checkUsable() const {
  if (!broken_.empty())
    throw Error(OTC_UNAVAILABLE, "the communicator failed before: " + broken_);
}

std::string Watchdog::describe(const Collective &what, int64_t index) const {
  std::string s = "collective " + std::to_string(index);
  if (what.group) {
    std::vector<std::string> members;
    for (int64_t r : *what.group)
      members.push_back(std::to_string(r));
    s += " of SDP owner group {" + ranks(members) + "}";
  }
  int64_t step = step_;
  s += inStep_     ? " in step " + std::to_string(step)
       : step == 0 ? std::string(" before the first step")
                   : " after step " + std::to_string(step);
  s += std::string(" (") + what.kind;
  if (what.count > 0)
    s += " of " + std::to_string(what.count) + " " + what.unit;
  return s + ")";
}

std::vector<int> Watchdog::peersOf(const Collective &what) const {
  std::vector<int> out;
  if (what.group) {
    for (int64_t r : *what.group)
      if (r != rank_)
        out.push_back(int(r));
  } else {
    for (int r = 0; r < size_; ++r)
      if (r != rank_)
        out.push_back(r);
  }
  return out;
}

bool Watchdog::local(int rank) const {
  return peers_[size_t(rank)].key == peers_[size_t(rank_)].key;
}

std::string Watchdog::processState(int rank) const {
  if (!local(rank))
    return "";
  std::string stat = firstLine(
      ("/proc/" + std::to_string(peers_[size_t(rank)].pid) + "/stat").c_str());
  if (stat.empty())
    return "exited";
  // "pid (comm) S ...": the state follows the last ')'.
  size_t close = stat.rfind(')');
  char state = close != std::string::npos && close + 2 < stat.size()
                   ? stat[close + 2]
                   : '?';
  if (state == 'Z' || state == 'X')
    return "exited";
  if (state == 'T' || state == 't')
    return "stopped";
  return "running";
}

void Watchdog::service(const std::string &current) {
  for (;;) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, control_, &flag, &st) !=
            MPI_SUCCESS ||
        !flag)
      break;
    char text[kMessageBytes] = {0};
    if (MPI_Recv(text, kMessageBytes, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG,
                 control_, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      break;
    text[kMessageBytes - 1] = 0;
    if (st.MPI_TAG == kAnswerTag) {
      answers_[st.MPI_SOURCE] = text;
      continue;
    }
    // A probe: a peer timed out; say where this rank waits.
    sends_.emplace_back(MPI_REQUEST_NULL, std::vector<char>(kMessageBytes, 0));
    std::memcpy(sends_.back().second.data(), current.data(),
                std::min<size_t>(current.size(), kMessageBytes - 1));
    MPI_Isend(sends_.back().second.data(), kMessageBytes, MPI_CHAR,
              st.MPI_SOURCE, kAnswerTag, control_, &sends_.back().first);
  }
  while (!sends_.empty()) {
    int done = 0;
    if (MPI_Test(&sends_.front().first, &done, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS ||
        done)
      sends_.pop_front();
    else
      break;
  }
}

void Watchdog::fail(const std::string &why) {
  broken_ = why;
  throw Error(OTC_UNAVAILABLE, why);
}

void Watchdog::timedOut(const Collective &what, const std::string &where,
                        double waited) {
  std::vector<int> peers = peersOf(what);
  answers_.clear();
  for (int r : peers) {
    sends_.emplace_back(MPI_REQUEST_NULL, std::vector<char>(kMessageBytes, 0));
    std::memcpy(sends_.back().second.data(), where.data(),
                std::min<size_t>(where.size(), kMessageBytes - 1));
    MPI_Isend(sends_.back().second.data(), kMessageBytes, MPI_CHAR, r,
              kProbeTag, control_, &sends_.back().first);
  }
  // Ranks that wait answer from their own wait loop within kLookEvery;
  // the grace covers a loaded machine.
  auto deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(std::clamp(timeout_ * 0.2, 0.5, 3.0)));
  while (answers_.size() < peers.size() && Clock::now() < deadline) {
    service(where);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<std::string> missing, with, elsewhere;
  for (int r : peers) {
    auto it = answers_.find(r);
    std::string name = "rank " + std::to_string(r);
    if (it == answers_.end()) {
      const Peer &p = peers_[size_t(r)];
      std::string state = processState(r);
      missing.push_back(name + " (pid " + std::to_string(p.pid) + " on " +
                        p.host + ": " +
                        (state.empty()        ? "no answer"
                         : state == "running" ? "running, not in a collective"
                                              : state) +
                        ")");
    } else if (it->second == where) {
      with.push_back(name);
    } else {
      elsewhere.push_back(name + " in " + it->second);
    }
  }
  char secs[64];
  std::snprintf(secs, sizeof secs, "%.1f s (the collective timeout is %g s)",
                waited, timeout_);
  std::string why = "collective timeout: rank " + std::to_string(rank_) +
                    " waited " + secs + " in " + where;
  if (!missing.empty())
    why += "; did not arrive: " + ranks(missing);
  if (!elsewhere.empty())
    why += "; waiting elsewhere: " + ranks(elsewhere);
  if (!with.empty())
    why += "; waiting in it too: " + ranks(with);
  fail(why);
}

void Watchdog::wait(const Collective &what, const std::function<bool()> &done,
                    bool polite) {
  checkUsable();
  int64_t index = ++counts_[what.group ? *what.group : std::vector<int64_t>()];
  if (!started_) {
    while (!done())
      ;
    return;
  }
  const Clock::time_point start = Clock::now();
  Clock::time_point nextLook = start + kLookEvery;
  std::string where;
  for (int64_t polls = 0;; ++polls) {
    if (done())
      return;
    if (polls < 64)
      continue;
    if (polite)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    const Clock::time_point now = Clock::now();
    if (now < nextLook)
      continue;
    nextLook = now + kLookEvery;
    if (where.empty())
      where = describe(what, index);
    service(where);
    for (int r : peersOf(what))
      if (processState(r) == "exited") {
        // The peer may have finished this collective and gone before this
        // rank's transfer completed: give it a moment to.
        for (auto until = now + kLookEvery; Clock::now() < until;)
          if (done())
            return;
        fail("rank " + std::to_string(r) + " (pid " +
             std::to_string(peers_[size_t(r)].pid) + " on " +
             peers_[size_t(r)].host + ") exited while rank " +
             std::to_string(rank_) + " waited in " + where);
      }
    double waited = std::chrono::duration<double>(now - start).count();
    if (timeout_ > 0 && waited > timeout_)
      timedOut(what, where, waited);
  }
}

} // namespace otc
