//===- metrics.cpp - Metrics (JSON lines, TensorBoard), progress bar ------===//

#include "tooling/metrics.h"
#include "core/status.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace otc {

MetricsWriter::~MetricsWriter() {
  if (file_)
    std::fclose(file_);
}

void MetricsWriter::open(const std::string &path, bool append) {
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (!file_)
    throw Error(OTC_IO_ERROR, "cannot open the metrics file '" + path +
                                  "': " + std::strerror(errno));
  path_ = path;
}

void MetricsWriter::write(const std::string &line) {
  if (!file_)
    return;
  // A full disk or a failing device is an error, not an empty file.
  if (std::fputs(line.c_str(), file_) < 0 || std::fputc('\n', file_) == EOF ||
      std::fflush(file_) != 0)
    throw Error(OTC_IO_ERROR, "cannot write the metrics file '" + path_ +
                                  "': " + std::strerror(errno));
}

void MetricsWriter::openTensorBoard(const std::string &dir) {
  events_.open(dir);
}

void MetricsWriter::close() {
  events_.close();
  if (!file_)
    return;
  std::FILE *f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0)
    throw Error(OTC_IO_ERROR, "cannot write the metrics file '" + path_ +
                                  "': " + std::strerror(errno));
}

namespace {
// JSON has no NaN/Inf; a diverged loss is written as null.
nlohmann::json number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}
} // namespace

void MetricsWriter::logStep(int64_t step, int64_t epoch, double loss, double lr,
                            double gradNorm, double samplesPerS,
                            uint64_t bytesSent, uint64_t bytesReceived,
                            double timeS,
                            const std::vector<float> &compressRatios) {
  nlohmann::json j;
  j["step"] = step;
  j["epoch"] = epoch;
  j["loss"] = number(loss);
  j["lr"] = number(lr);
  if (!(gradNorm < 0)) // NaN: a non-finite norm is written as null
    j["grad_norm"] = number(gradNorm);
  j["samples_per_s"] = number(samplesPerS);
  j["bytes_sent"] = bytesSent;
  j["bytes_received"] = bytesReceived;
  j["time_s"] = number(timeS);
  if (!compressRatios.empty()) {
    nlohmann::json r = nlohmann::json::array();
    for (float v : compressRatios)
      r.push_back(number(v));
    j["compress_ratio"] = r;
  }
  write(j.dump());
  if (!events_.isOpen())
    return;
  events_.scalar("train/loss", step, loss);
  events_.scalar("train/lr", step, lr);
  if (!(gradNorm < 0))
    events_.scalar("train/grad_norm", step, gradNorm);
  events_.scalar("train/samples_per_s", step, samplesPerS);
  events_.scalar("comm/bytes_sent", step, double(bytesSent));
  events_.scalar("comm/bytes_received", step, double(bytesReceived));
  for (size_t b = 0; b < compressRatios.size(); ++b)
    events_.scalar("compress/ratio_bucket" + std::to_string(b), step,
                   compressRatios[b]);
}

void MetricsWriter::logSkip(int64_t step, int64_t epoch,
                            const std::string &reason, uint64_t bytesSent,
                            uint64_t bytesReceived, double timeS) {
  nlohmann::json j;
  j["step"] = step;
  j["epoch"] = epoch;
  j["skipped"] = true;
  j["reason"] = reason;
  j["bytes_sent"] = bytesSent;
  j["bytes_received"] = bytesReceived;
  j["time_s"] = number(timeS);
  write(j.dump());
  events_.scalar("train/skipped_steps", step, double(++skipped_));
}

void MetricsWriter::logEval(int64_t step, int64_t epoch, double accuracy,
                            int64_t correct, int64_t total, double loss,
                            bool hasLoss) {
  nlohmann::json j;
  j["step"] = step;
  j["epoch"] = epoch;
  j["eval"] = true;
  if (accuracy >= 0) {
    j["accuracy"] = number(accuracy);
    j["correct"] = correct;
  }
  j["total"] = total;
  j["loss"] = hasLoss ? number(loss) : nlohmann::json(nullptr);
  write(j.dump());
  if (accuracy >= 0)
    events_.scalar("eval/accuracy", step, accuracy);
  if (hasLoss)
    events_.scalar("eval/loss", step, loss);
}

ProgressBar::ProgressBar(std::FILE *out, bool enabled)
    : out_(out), enabled_(enabled), tty_(isatty(fileno(out)) != 0) {}

void ProgressBar::draw(int64_t epoch, int64_t epochs, int64_t stepInEpoch,
                       int64_t stepsPerEpoch, double loss, double lr,
                       double samplesPerS, double etaS) {
  if (!enabled_)
    return;
  constexpr int kWidth = 20;
  int filled =
      stepsPerEpoch > 0
          ? int(kWidth * std::min<int64_t>(stepInEpoch, stepsPerEpoch) /
                stepsPerEpoch)
          : kWidth;
  std::string bar(size_t(filled), '#');
  bar.append(size_t(kWidth - filled), '.');
  char eta[32];
  if (!std::isfinite(etaS) || etaS < 0)
    std::snprintf(eta, sizeof eta, "?");
  else if (etaS >= 3600)
    std::snprintf(eta, sizeof eta, "%dh%02dm", int(etaS / 3600),
                  int(std::fmod(etaS, 3600) / 60));
  else if (etaS >= 60)
    std::snprintf(eta, sizeof eta, "%dm%02ds", int(etaS / 60),
                  int(std::fmod(etaS, 60)));
  else
    std::snprintf(eta, sizeof eta, "%ds", int(std::ceil(etaS)));
  char line[256];
  std::snprintf(line, sizeof line,
                "epoch %lld/%lld [%s] step %lld/%lld loss %.4f lr %.3g %.0f "
                "samples/s ETA %s",
                (long long)epoch, (long long)epochs, bar.c_str(),
                (long long)stepInEpoch, (long long)stepsPerEpoch, loss, lr,
                samplesPerS, eta);
  if (tty_) {
    std::fprintf(out_, "\r%s\x1b[K", line);
    open_ = true;
  } else {
    std::fprintf(out_, "%s\n", line);
  }
  std::fflush(out_);
}

void ProgressBar::finishLine() {
  if (open_) {
    std::fputc('\n', out_);
    std::fflush(out_);
    open_ = false;
  }
}

void ProgressBar::print(const std::string &line) {
  if (!enabled_)
    return;
  finishLine();
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

} // namespace otc
