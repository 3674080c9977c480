/*===- embed.c - Training a compiled OTC program from C -------------------===*\
|*                                                                            *|
|* usage: embed-c PROGRAM.so OUT_DIR                                         *|
|*                                                                            *|
|* Loads a classifier compiled with `otc-compile --emit=lib` (one float data  *|
|* input [batch, features...], int64 labels [batch], logits [batch, classes]),*|
|* trains it on separable data made in memory, lowers the learning rate,      *|
|* checkpoints, checks that resuming from the checkpoint repeats the same     *|
|* losses, and exports the trained model to OUT_DIR/trained.onnx. Exits 1,   *|
|* with the runtime's message, on any error or when training does not learn.  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include <otc/runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stops with the message of a failed call. */
static void check(otc_status_t status, const char *what) {
  if (!status)
    return;
  fprintf(stderr, "embed-c: %s: %s\n", what, otc_status_message(status));
  otc_status_free(status);
  exit(1);
}

static uint64_t rng = 88172645463325252ull;
static float uniform(void) { /* xorshift64, in [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) * (2.0 / 16777216.0) - 1.0);
}

typedef struct {
  int64_t batch, features, classes;
  const char *x_name, *y_name;
  float *x, *centers;
  int64_t *y;
} Data;

/* One batch: each sample is its class's center plus noise. */
static void make_batch(Data *d) {
  for (int64_t i = 0; i < d->batch; ++i) {
    int64_t c = (int64_t)((uniform() + 1) * 0.5 * d->classes) % d->classes;
    d->y[i] = c;
    for (int64_t j = 0; j < d->features; ++j)
      d->x[i * d->features + j] =
          d->centers[c * d->features + j] + 0.5f * uniform();
  }
}

static float train(otc_session_t *s, Data *d) {
  float loss = 0;
  make_batch(d);
  check(otc_session_bind_input(s, d->x_name, d->x,
                               d->batch * d->features * sizeof(float)),
        "bind the data");
  check(otc_session_bind_input(s, d->y_name, d->y, d->batch * sizeof(int64_t)),
        "bind the labels");
  check(otc_session_train_step(s, &loss), "train step");
  return loss;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: embed-c PROGRAM.so OUT_DIR\n");
    return 2;
  }
  otc_program_t *program = NULL;
  check(otc_program_load(argv[1], &program), "load the program");

  Data d = {0};
  d.batch = otc_program_batch(program);
  d.features = 1;
  for (int64_t i = 0; i < otc_program_input_count(program); ++i) {
    otc_tensor_info_t in;
    check(otc_program_input(program, i, &in), "read the inputs");
    if (strcmp(in.role, "label") == 0) {
      d.y_name = in.name;
    } else if (in.dtype == OTC_DTYPE_F32) {
      d.x_name = in.name;
      for (int32_t k = 1; k < in.rank; ++k)
        d.features *= in.shape[k];
    }
  }
  otc_tensor_info_t out;
  check(otc_program_eval_output(program, &out), "read the model output");
  if (!d.x_name || !d.y_name || out.rank != 2) {
    fprintf(stderr, "embed-c: %s is not a classifier of float inputs\n",
            argv[1]);
    return 1;
  }
  d.classes = out.shape[1];
  d.x = malloc(d.batch * d.features * sizeof(float));
  d.y = malloc(d.batch * sizeof(int64_t));
  d.centers = malloc(d.classes * d.features * sizeof(float));
  for (int64_t i = 0; i < d.classes * d.features; ++i)
    d.centers[i] = uniform();

  otc_comm_t *comm = NULL;
  otc_session_t *session = NULL;
  otc_session_options_t options;
  otc_session_options_initialize(&options);
  check(otc_comm_create_local(&comm), "create a communicator");
  check(otc_session_create(program, comm, &options, &session),
        "create a session");

  float first = train(session, &d), loss = first;
  for (int step = 1; step < 60; ++step)
    loss = train(session, &d);
  check(otc_session_set_lr(session, otc_session_get_lr(session) * 0.5),
        "set the learning rate");
  printf("loss %.4f -> %.4f after 60 steps; lr now %g\n", first, loss,
         otc_session_get_lr(session));

  /* A checkpoint, then 5 steps twice from it: the same losses. */
  char path[4096];
  snprintf(path, sizeof(path), "%s/embed-c.ckpt", argv[2]);
  uint64_t saved_rng = rng;
  check(
      otc_session_save_checkpoint(session, path, &saved_rng, sizeof(saved_rng)),
      "save a checkpoint");
  float after[5];
  for (int i = 0; i < 5; ++i)
    after[i] = train(session, &d);
  size_t extra = 0;
  check(otc_session_load_checkpoint(session, path, &rng, sizeof(rng), &extra),
        "load the checkpoint");
  int same = extra == sizeof(rng) && otc_session_get_lr(session) > 0;
  for (int i = 0; i < 5; ++i)
    same &= train(session, &d) == after[i];
  printf("resumed from %s: %s\n", path,
         same ? "the same 5 losses" : "DIFFERENT losses");

  snprintf(path, sizeof(path), "%s/trained.onnx", argv[2]);
  check(otc_session_export_onnx(session, path), "export");
  printf("exported %s\n", path);

  int learned = isfinite(loss) && loss < 0.5f * first;
  otc_session_release(session);
  otc_comm_release(comm);
  otc_program_release(program);
  free(d.x);
  free(d.y);
  free(d.centers);
  if (!learned)
    fprintf(stderr, "embed-c: the loss did not halve (%g -> %g)\n", first,
            loss);
  return learned && same ? 0 : 1;
}
