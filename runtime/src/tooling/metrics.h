//===- metrics.h - Metrics (JSON lines, TensorBoard), progress bar -*- C++
//-*-===//

#ifndef OTC_RUNTIME_TOOLING_METRICS_H
#define OTC_RUNTIME_TOOLING_METRICS_H

#include "tooling/tensorboard.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace otc {

/// One JSON object per line (--metrics) and the same values as TensorBoard
/// scalars (--tensorboard), each flushed as written so a crash loses
/// nothing; a write that fails throws an Error naming the file.
class MetricsWriter {
public:
  MetricsWriter() = default;
  MetricsWriter(const MetricsWriter &) = delete;
  MetricsWriter &operator=(const MetricsWriter &) = delete;
  ~MetricsWriter();

  /// Opens `path`; `append` keeps earlier lines (a resumed run).
  void open(const std::string &path, bool append);
  /// A new TensorBoard event file in the existing folder `dir`. Tags:
  /// train/{loss,lr,grad_norm,samples_per_s,skipped_steps},
  /// comm/{bytes_sent,bytes_received}, compress/ratio_bucket<b>,
  /// eval/{accuracy,loss}.
  void openTensorBoard(const std::string &dir);
  /// Closes the files; throws an Error if what was written did not reach
  /// them.
  void close();

  /// `lr`: the step's learning rate; `gradNorm`: its gradient norm before
  /// clipping ("grad_norm", omitted when negative); `compressRatios`: each
  /// compressed bucket's last ratio ("compress_ratio", omitted when empty).
  void logStep(int64_t step, int64_t epoch, double loss, double lr,
               double gradNorm, double samplesPerS, uint64_t bytesSent,
               uint64_t bytesReceived, double timeS,
               const std::vector<float> &compressRatios = {});
  /// A skipped step: {"step": the optimizer step that was attempted (it is
  /// retried on the next batch), "skipped": true, "reason": ...}.
  void logSkip(int64_t step, int64_t epoch, const std::string &reason,
               uint64_t bytesSent, uint64_t bytesReceived, double timeS);
  /// `accuracy` < 0 means the program has no accuracy (not classification).
  void logEval(int64_t step, int64_t epoch, double accuracy, int64_t correct,
               int64_t total, double loss, bool hasLoss);

private:
  void write(const std::string &line);
  std::FILE *file_ = nullptr;
  std::string path_;
  EventFileWriter events_;
  int64_t skipped_ = 0; // steps skipped in this run, for train/skipped_steps
};

/// Rank 0's progress line on stderr: redrawn in place on a terminal, a
/// full line every `logEvery` steps otherwise.
class ProgressBar {
public:
  ProgressBar(std::FILE *out, bool enabled);
  bool isTty() const { return tty_; }
  /// Draws `epoch e/E [####......] step s/S loss L lr X R samples/s ETA T`.
  void draw(int64_t epoch, int64_t epochs, int64_t stepInEpoch,
            int64_t stepsPerEpoch, double loss, double lr, double samplesPerS,
            double etaS);
  /// Ends a redrawn line (before other output or at an epoch's end).
  void finishLine();
  void print(const std::string &line);

private:
  std::FILE *out_;
  bool enabled_, tty_;
  bool open_ = false;
};

} // namespace otc

#endif // OTC_RUNTIME_TOOLING_METRICS_H
