// SPDX-License-Identifier: Apache-2.0
/*
 * nccl_allreduce: the smallest real NCCL job, for the GPU machine (never run in CI). One
 * process drives every visible GPU (ncclCommInitAll), all-reduces float buffers of a few sizes
 * and checks every element. With NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 all bytes cross the
 * network plugin, so this shows which net NCCL loaded and that it moves correct data.
 * Usage: nccl_allreduce [max_bytes]   (default 64 MiB). Exit 0 = all correct.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define CHECK_CUDA(x)                                                             \
	do {                                                                      \
		cudaError_t e_ = (x);                                             \
		if (e_ != cudaSuccess) {                                          \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, \
				cudaGetErrorString(e_));                          \
			exit(2);                                                  \
		}                                                                 \
	} while (0)
#define CHECK_NCCL(x)                                                             \
	do {                                                                      \
		ncclResult_t r_ = (x);                                            \
		if (r_ != ncclSuccess) {                                          \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, \
				ncclGetErrorString(r_));                          \
			exit(3);                                                  \
		}                                                                 \
	} while (0)

int main(int argc, char **argv)
{
	size_t max_bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : (64u << 20);
	int ndev = 0, version = 0, wrong_total = 0;

	CHECK_CUDA(cudaGetDeviceCount(&ndev));
	if (ndev < 1) {
		fprintf(stderr, "no GPU\n");
		return 77;
	}
	CHECK_NCCL(ncclGetVersion(&version));
	printf("nccl_allreduce: %d GPUs, NCCL %d\n", ndev, version);

	ncclComm_t *comms = calloc(ndev, sizeof(*comms));
	cudaStream_t *streams = calloc(ndev, sizeof(*streams));
	float **buf = calloc(ndev, sizeof(*buf));
	float *host = malloc(max_bytes);
	int *devs = calloc(ndev, sizeof(*devs));

	for (int i = 0; i < ndev; i++)
		devs[i] = i;
	CHECK_NCCL(ncclCommInitAll(comms, ndev, devs));
	for (int i = 0; i < ndev; i++) {
		CHECK_CUDA(cudaSetDevice(i));
		CHECK_CUDA(cudaStreamCreate(&streams[i]));
		CHECK_CUDA(cudaMalloc((void **)&buf[i], max_bytes));
	}

	for (size_t bytes = 8; bytes <= max_bytes; bytes *= 8) {
		size_t count = bytes / sizeof(float);
		int wrong = 0;

		/* rank i holds (i + 1) * (j % 17): the sum is exactly representable */
		for (int i = 0; i < ndev; i++) {
			for (size_t j = 0; j < count; j++)
				host[j] = (float)((i + 1) * (int)(j % 17));
			CHECK_CUDA(cudaSetDevice(i));
			CHECK_CUDA(cudaMemcpy(buf[i], host, bytes, cudaMemcpyHostToDevice));
		}
		CHECK_NCCL(ncclGroupStart());
		for (int i = 0; i < ndev; i++)
			CHECK_NCCL(ncclAllReduce(buf[i], buf[i], count, ncclFloat, ncclSum,
						 comms[i], streams[i]));
		CHECK_NCCL(ncclGroupEnd());
		for (int i = 0; i < ndev; i++) {
			CHECK_CUDA(cudaSetDevice(i));
			CHECK_CUDA(cudaStreamSynchronize(streams[i]));
			CHECK_CUDA(cudaMemcpy(host, buf[i], bytes, cudaMemcpyDeviceToHost));
			for (size_t j = 0; j < count; j++) {
				float want = (float)(ndev * (ndev + 1) / 2 * (int)(j % 17));

				wrong += host[j] != want;
			}
		}
		printf("nccl_allreduce: %12zu bytes  #wrong %d\n", bytes, wrong);
		wrong_total += wrong;
	}

	for (int i = 0; i < ndev; i++) {
		CHECK_CUDA(cudaSetDevice(i));
		CHECK_CUDA(cudaFree(buf[i]));
		ncclCommDestroy(comms[i]);
	}
	free(comms);
	free(streams);
	free(buf);
	free(host);
	free(devs);
	printf("nccl_allreduce: %s\n", wrong_total ? "FAILED" : "OK");
	return wrong_total ? 1 : 0;
}
