/* The demo MLP training step: its NEFF (built with the NEFF builder) and a plain
 * C host reference of the same step, shared by neuronsim-demo and the tests. */
#ifndef NEURONSIM_TOOLS_DEMO_MLP_NEFF_H
#define NEURONSIM_TOOLS_DEMO_MLP_NEFF_H

#include <stddef.h>
#include <stdint.h>

#include "neuronsim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Shapes and learning rate of one training step:
 *   h = relu(x @ w1 + b1)          x [batch, in], w1 [in, hidden]
 *   z = h @ w2 + b2                w2 [hidden, classes]
 *   loss = mean_b(logsumexp(z_b) - sum_c y_bc z_bc)   (softmax cross-entropy,
 *                                                    y one-hot [batch, classes])
 *   w -= lr * dloss/dw for w1, b1, w2, b2 (in place) */
typedef struct demo_mlp_config {
	uint32_t batch;
	uint32_t in;
	uint32_t hidden;
	uint32_t classes;
	float lr;
} demo_mlp_config_t;

/* 64 -> 128 (relu) -> 10, batch 32, lr 0.1. */
demo_mlp_config_t demo_mlp_default_config(void);

/* I/O tensor names of the NEFF. Inputs x, y, w1, b1, w2, b2 (f32); outputs
 * loss (f32 [1]) and w1_out, b1_out, w2_out, b2_out, which alias the inputs
 * w1, b1, w2, b2 (alias_input) so the runtime updates the weights in place. */
#define DEMO_MLP_N_INPUTS 6
#define DEMO_MLP_N_OUTPUTS 5
extern const char *const demo_mlp_input_names[DEMO_MLP_N_INPUTS];
extern const char *const demo_mlp_output_names[DEMO_MLP_N_OUTPUTS];

/* Builds the training step as one single-core NEFF: matmuls on the tensor
 * engine, elementwise and reductions on the vector engine, activations on the
 * scalar engine, ordered with semaphores. On success *out_neff is a malloc'd
 * buffer the caller frees with free(). On failure returns a status
 * (INVALID_ARGUMENT for a bad config, else the builder's, annotated with the
 * step: "demo MLP NEFF: emitting fwd.dot1: ...") and *out_neff is NULL,
 * *out_size 0. A later issue produces the same NEFF by compiling an HLO module;
 * this function is the one place to swap. */
ns_status_t demo_mlp_neff_build(const demo_mlp_config_t *cfg, void **out_neff,
				size_t *out_size);

/* The parameters and data of the demo, host side. */
typedef struct demo_mlp_params {
	float *w1, *b1, *w2, *b2;
} demo_mlp_params_t;

/* Fills x [batch, in] and one-hot y [batch, classes] with a fixed synthetic
 * dataset (labels from a random linear teacher, so it is learnable), and the
 * parameters with a seeded uniform init scaled by 1/sqrt(fan_in). Same seed,
 * same numbers, on every machine. */
void demo_mlp_init(const demo_mlp_config_t *cfg, uint64_t seed, float *x, float *y,
		   demo_mlp_params_t *p);

/* One training step on the host in plain float loops: returns the loss of the
 * current parameters and updates p in place. */
float demo_mlp_host_step(const demo_mlp_config_t *cfg, const float *x, const float *y,
			 demo_mlp_params_t *p);

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_TOOLS_DEMO_MLP_NEFF_H */
