//===- profiler.cpp - Kernel and collective times of profiled steps -------===//

#include "core/profiler.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

namespace otc {

namespace {

std::string jsonString(const char *s) {
  std::string out = "\"";
  for (; s && *s; ++s) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

double seconds(Profiler::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

/// "12.3 GFLOP/s" from FLOPs, else "4.5 GB/s" from bytes, else "-".
std::string rate(double flops, double bytes, double secs) {
  char buf[32];
  if (secs <= 0)
    return "-";
  if (flops > 0)
    std::snprintf(buf, sizeof buf, "%.1f GFLOP/s", flops / secs / 1e9);
  else if (bytes > 0)
    std::snprintf(buf, sizeof buf, "%.2f GB/s", bytes / secs / 1e9);
  else
    return "-";
  return buf;
}

} // namespace

Profiler::Profiler(const otc_program_entry_t &entry, std::function<void()> sync,
                   size_t maxEvents)
    : entry(entry), sync(std::move(sync)), maxEvents(maxEvents),
      sites(size_t(std::max(entry.num_sites, 0))), origin(Clock::now()) {}

void Profiler::callback(void *profiler, int32_t site, int32_t begin) {
  static_cast<Profiler *>(profiler)->mark(site, begin != 0);
}

void Profiler::trace(const Event &e) {
  std::lock_guard<std::mutex> lock(mu);
  if (events.size() < maxEvents)
    events.push_back(e);
  else
    truncated = true;
}

void Profiler::stepBegin(int64_t s) {
  if (sync)
    sync();
  step = s;
  if (steps_ == 0)
    firstStep = s;
  openSite = -1;
  stepStart = Clock::now();
}

void Profiler::stepEnd() {
  if (sync)
    sync();
  const Clock::time_point end = Clock::now();
  ++steps_;
  stepSeconds += seconds(end - stepStart);
  trace({-1, nullptr, step, stepStart, end});
  if (step == firstStep) { // its accumulated micro-batches too
    warmUp.steps = steps_;
    warmUp.sites = sites;
    warmUp.stepSeconds = stepSeconds;
    std::lock_guard<std::mutex> lock(mu);
    warmUp.collectiveSeconds = collectiveSeconds;
    warmUp.collectiveCalls = collectiveCalls;
  }
}

void Profiler::mark(int32_t site, bool begin) {
  if (site < 0 || size_t(site) >= sites.size())
    return; // not this entry's: a program and runtime out of step
  if (sync)
    sync();
  const Clock::time_point now = Clock::now();
  if (begin) { // a site left open by an early return is dropped
    openSite = site;
    siteStart = now;
    return;
  }
  if (openSite != site)
    return;
  openSite = -1;
  sites[size_t(site)].calls += 1;
  sites[size_t(site)].seconds += seconds(now - siteStart);
  trace({site, nullptr, step, siteStart, now});
}

void Profiler::collective(const char *what, Clock::time_point begin,
                          Clock::time_point end) {
  {
    std::lock_guard<std::mutex> lock(mu);
    collectiveSeconds += seconds(end - begin);
    ++collectiveCalls;
  }
  trace({-2, what, step, begin, end});
}

void Profiler::writeTrace(std::ostream &os, int rank) const {
  std::lock_guard<std::mutex> lock(mu);
  auto us = [&](Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t - origin).count();
  };
  char buf[160];
  os << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  std::snprintf(buf, sizeof buf,
                "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,"
                "\"args\":{\"name\":\"rank %d\"}},\n"
                "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":0,"
                "\"args\":{\"name\":\"step\"}},\n",
                rank, rank, rank);
  os << buf;
  std::snprintf(buf, sizeof buf,
                "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":1,"
                "\"args\":{\"name\":\"collectives\"}}",
                rank);
  os << buf;
  for (const Event &e : events) {
    std::string name, cat, source;
    int tid = 0;
    if (e.site == -1) {
      name = "step " + std::to_string(e.step);
      cat = "step";
    } else if (e.site == -2) {
      name = e.what ? e.what : "collective";
      cat = "collective";
      tid = 1;
    } else {
      const otc_profile_site_t &s = entry.sites[e.site];
      name = s.name ? s.name : "";
      cat = s.flops > 0 ? "kernel,compute" : "kernel";
      source = s.source ? s.source : "";
    }
    std::snprintf(buf, sizeof buf,
                  ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                  "\"dur\":%.3f,",
                  rank, tid, us(e.begin), us(e.end) - us(e.begin));
    os << buf << "\"name\":" << jsonString(name.c_str())
       << ",\"cat\":" << jsonString(cat.c_str())
       << ",\"args\":{\"step\":" << e.step;
    if (e.site >= 0)
      os << ",\"site\":" << e.site
         << ",\"source\":" << jsonString(source.c_str());
    os << "}}";
  }
  os << "\n]}\n";
}

void Profiler::writeSummary(std::ostream &os, int rank) const {
  std::lock_guard<std::mutex> lock(mu);
  char buf[256];
  // The first profiled step (with its accumulated micro-batches) is a
  // warm-up (oneDNN's JIT, first touches of the arena: 10-40x a later
  // step's time for some kernels), left out when later ones were profiled,
  // as torch.profiler's schedule does; the trace keeps it.
  const bool skipWarmUp = steps_ > warmUp.steps;
  std::vector<Site> sites = this->sites;
  double stepSeconds = this->stepSeconds;
  double collectiveSeconds = this->collectiveSeconds;
  int64_t collectiveCalls = this->collectiveCalls;
  if (skipWarmUp) {
    for (size_t i = 0; i < sites.size() && i < warmUp.sites.size(); ++i) {
      sites[i].calls -= warmUp.sites[i].calls;
      sites[i].seconds -= warmUp.sites[i].seconds;
    }
    stepSeconds -= warmUp.stepSeconds;
    collectiveSeconds -= warmUp.collectiveSeconds;
    collectiveCalls -= warmUp.collectiveCalls;
  }
  const int64_t counted = skipWarmUp ? steps_ - warmUp.steps : steps_;
  const double n = double(std::max<int64_t>(counted, 1));
  double kernelSeconds = 0;
  // Per kernel name (every site of it), in first-seen order for ties.
  struct Row {
    std::string name;
    int64_t calls = 0;
    double secs = 0, flops = 0, bytes = 0;
  };
  std::vector<Row> rows;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < sites.size(); ++i) {
    const Site &s = sites[i];
    if (!s.calls)
      continue;
    const otc_profile_site_t &info = entry.sites[i];
    std::string name = info.name ? info.name : "";
    auto [it, fresh] = index.emplace(name, rows.size());
    if (fresh)
      rows.push_back({name});
    Row &r = rows[it->second];
    r.calls += s.calls;
    r.secs += s.seconds;
    r.flops += info.flops * double(s.calls);
    r.bytes += info.bytes * double(s.calls);
    kernelSeconds += s.seconds;
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row &a, const Row &b) { return a.secs > b.secs; });
  const double step = stepSeconds / n;
  std::snprintf(buf, sizeof buf,
                "profile (rank %d): %lld steps%s, %.3f ms per step, %.1f %% "
                "of it in the %zu sites below\n",
                rank, static_cast<long long>(steps_),
                skipWarmUp ? " (the first, a warm-up, left out below)" : "",
                1e3 * step,
                stepSeconds > 0 ? 100.0 * kernelSeconds / stepSeconds : 0.0,
                sites.size());
  os << buf;
  std::snprintf(buf, sizeof buf, "  %-28s %7s %9s %10s  %s\n", "call", "share",
                "ms/step", "calls/step", "rate");
  os << buf;
  for (const Row &r : rows) {
    std::snprintf(
        buf, sizeof buf, "  %-28s %6.1f%% %9.3f %10.1f  %s\n", r.name.c_str(),
        stepSeconds > 0 ? 100.0 * r.secs / stepSeconds : 0.0, 1e3 * r.secs / n,
        double(r.calls) / n, rate(r.flops, r.bytes, r.secs).c_str());
    os << buf;
  }
  if (collectiveCalls) {
    std::snprintf(buf, sizeof buf,
                  "  collectives thread: %.3f ms per step in %.1f jobs (beside "
                  "the step; its waits are wait_collectives above)\n",
                  1e3 * collectiveSeconds / n, double(collectiveCalls) / n);
    os << buf;
  }
  // The busiest sites, with the ONNX node each came from.
  std::vector<size_t> order;
  for (size_t i = 0; i < sites.size(); ++i)
    if (sites[i].calls)
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return sites[a].seconds > sites[b].seconds;
  });
  if (order.size() > 10)
    order.resize(10);
  if (!order.empty())
    os << "  busiest sites:\n";
  for (size_t i : order) {
    const otc_profile_site_t &info = entry.sites[i];
    std::snprintf(buf, sizeof buf, "  %6.1f%% %9.3f  %-20s %-32s %s\n",
                  stepSeconds > 0 ? 100.0 * sites[i].seconds / stepSeconds
                                  : 0.0,
                  1e3 * sites[i].seconds / n, info.name ? info.name : "",
                  info.source && *info.source ? info.source : "-",
                  rate(info.flops * double(sites[i].calls),
                       info.bytes * double(sites[i].calls), sites[i].seconds)
                      .c_str());
    os << buf;
  }
  if (truncated) {
    std::snprintf(buf, sizeof buf,
                  "  (the trace holds the first %zu calls; the table counts "
                  "every call)\n",
                  maxEvents);
    os << buf;
  }
}

} // namespace otc
