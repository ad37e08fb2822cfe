// risc0_divide.cu - the polynomial division the risc0 prover runs for each combo
// (CudaHal::poly_divide in risc0/zkp/src/hal/cuda.rs), the same steps as
// supra_poly_divide in risc0/sys/kernels/zkp/cuda/supra/api.cu: sppark's
// div_by_x_minus_z<true> (cooperative launch) on the HAL's stream, then a
// one-element (16-byte) read of the remainder and a stream sync. Built here
// because api.cu also holds the BN254 Poseidon, which needs blst.
#include <ff/baby_bear.hpp>
#include <util/gpu_t.cuh>
#include <util/rusterror.h>

#include <polynomial/div_by_x_minus_z.cuh>

extern "C" RustError::by_value corpus_poly_divide(cudaStream_t stream, fr4_t d_inout[], size_t len,
                                                  fr4_t *remainder, const fr4_t &pow)
{
    stream_t sppark_stream(stream, 0);

    try {
        div_by_x_minus_z<true>(d_inout, len, pow, sppark_stream);
        sppark_stream.DtoH(remainder, &d_inout[len - 1], 1);
        sppark_stream.sync();
    } catch (const cuda_error &e) {
        sppark_stream.sync();
        return RustError{e.code(), e.what()};
    }

    return RustError{cudaSuccess};
}
