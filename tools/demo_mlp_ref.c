/* Host reference of the demo MLP training step in plain float loops, and the
 * seeded synthetic dataset and initial weights both sides start from. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "demo_mlp_neff.h"
#include "neuronsim/splitmix64.h"

/* Uniform in [-1, 1) with 24 random bits, exactly representable in float. */
static float mix_uniform(uint64_t *state)
{
	return (float)(ns_splitmix64(state) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

void demo_mlp_init(const demo_mlp_config_t *cfg, uint64_t seed, float *x, float *y,
		   demo_mlp_params_t *p)
{
	const uint32_t B = cfg->batch, I = cfg->in, H = cfg->hidden, C = cfg->classes;
	uint64_t st = seed;
	for (size_t i = 0; i < (size_t)B * I; i++)
		x[i] = mix_uniform(&st);

	/* Labels from a random linear teacher: learnable, so the loss can fall. */
	float *teacher = malloc((size_t)I * C * sizeof(float));
	for (size_t i = 0; i < (size_t)I * C; i++)
		teacher[i] = teacher ? mix_uniform(&st) : 0.0f;
	memset(y, 0, (size_t)B * C * sizeof(float));
	for (uint32_t b = 0; b < B; b++) {
		uint32_t best = 0;
		float best_v = -INFINITY;
		for (uint32_t c = 0; c < C && teacher; c++) {
			float v = 0.0f;
			for (uint32_t i = 0; i < I; i++)
				v += x[(size_t)b * I + i] * teacher[(size_t)i * C + c];
			if (v > best_v) {
				best_v = v;
				best = c;
			}
		}
		y[(size_t)b * C + best] = 1.0f;
	}
	free(teacher);

	const float s1 = 1.0f / sqrtf((float)I), s2 = 1.0f / sqrtf((float)H);
	for (size_t i = 0; i < (size_t)I * H; i++)
		p->w1[i] = mix_uniform(&st) * s1;
	for (size_t i = 0; i < H; i++)
		p->b1[i] = mix_uniform(&st) * 0.1f;
	for (size_t i = 0; i < (size_t)H * C; i++)
		p->w2[i] = mix_uniform(&st) * s2;
	for (size_t i = 0; i < C; i++)
		p->b2[i] = mix_uniform(&st) * 0.1f;
}

/* out[m * N + n] = the sum over k = 0..K-1, in order, of a(m, k) * b(k, n), where
 * a(m, k) = a[m * am + k * ak] and b(k, n) = b[k * bk + n * bn]: the strides make
 * it x.w, h^T.dz or dz.w2^T. */
static void matmul(float *out, const float *a, size_t am, size_t ak, const float *b, size_t bk,
		   size_t bn, size_t M, size_t K, size_t N)
{
	for (size_t m = 0; m < M; m++)
		for (size_t n = 0; n < N; n++) {
			float acc = 0.0f;
			for (size_t k = 0; k < K; k++)
				acc += a[m * am + k * ak] * b[k * bk + n * bn];
			out[m * N + n] = acc;
		}
}

float demo_mlp_host_step(const demo_mlp_config_t *cfg, const float *x, const float *y,
			 demo_mlp_params_t *p)
{
	const size_t B = cfg->batch, I = cfg->in, H = cfg->hidden, C = cfg->classes;
	float *hpre = calloc(B * H, sizeof(float)), *h = calloc(B * H, sizeof(float));
	float *z = calloc(B * C, sizeof(float)), *dz = calloc(B * C, sizeof(float));
	float *dh = calloc(B * H, sizeof(float));
	float *dw1 = calloc(I * H, sizeof(float)), *dw2 = calloc(H * C, sizeof(float));
	float *db1 = calloc(H, sizeof(float)), *db2 = calloc(C, sizeof(float));
	float loss = NAN;
	if (!hpre || !h || !z || !dz || !dh || !dw1 || !dw2 || !db1 || !db2)
		goto out;

	matmul(hpre, x, I, 1, p->w1, H, 1, B, I, H);
	for (size_t b = 0; b < B; b++)
		for (size_t j = 0; j < H; j++) {
			hpre[b * H + j] += p->b1[j];
			h[b * H + j] = hpre[b * H + j] > 0.0f ? hpre[b * H + j] : 0.0f;
		}
	matmul(z, h, H, 1, p->w2, C, 1, B, H, C);
	for (size_t b = 0; b < B; b++)
		for (size_t c = 0; c < C; c++)
			z[b * C + c] += p->b2[c];

	float total = 0.0f;
	for (size_t b = 0; b < B; b++) {
		float m = -INFINITY;
		for (size_t c = 0; c < C; c++)
			m = fmaxf(m, z[b * C + c]);
		float sum = 0.0f, yz = 0.0f;
		for (size_t c = 0; c < C; c++) {
			sum += expf(z[b * C + c] - m);
			yz += y[b * C + c] * (z[b * C + c] - m);
		}
		total += logf(sum) - yz;
		for (size_t c = 0; c < C; c++)
			dz[b * C + c] = (expf(z[b * C + c] - m) / sum - y[b * C + c]) / (float)B;
	}
	loss = total / (float)B;

	matmul(dw2, h, 1, H, dz, C, 1, H, B, C);
	for (size_t c = 0; c < C; c++)
		for (size_t b = 0; b < B; b++)
			db2[c] += dz[b * C + c];
	matmul(dh, dz, C, 1, p->w2, 1, C, B, C, H);
	for (size_t i = 0; i < B * H; i++)
		if (!(h[i] > 0.0f))
			dh[i] = 0.0f;
	matmul(dw1, x, 1, I, dh, H, 1, I, B, H);
	for (size_t j = 0; j < H; j++)
		for (size_t b = 0; b < B; b++)
			db1[j] += dh[b * H + j];

	for (size_t i = 0; i < I * H; i++)
		p->w1[i] -= cfg->lr * dw1[i];
	for (size_t j = 0; j < H; j++)
		p->b1[j] -= cfg->lr * db1[j];
	for (size_t i = 0; i < H * C; i++)
		p->w2[i] -= cfg->lr * dw2[i];
	for (size_t c = 0; c < C; c++)
		p->b2[c] -= cfg->lr * db2[c];
out:
	free(hpre); free(h); free(z); free(dz); free(dh);
	free(dw1); free(dw2); free(db1); free(db2);
	return loss;
}
