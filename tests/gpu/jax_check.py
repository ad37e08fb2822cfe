# jax_check.py - a small JAX workload (jit, matmul, reductions, random) whose
# printed digest must not change under the library.
import hashlib
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# XLA's GPU autotuner may pick another matmul algorithm from run to run: on an
# H200 (2026-11-22) 2 of 16 native runs printed another digest. Ask for
# deterministic ops so that a difference can only come from the library.
os.environ.setdefault("XLA_FLAGS", "--xla_gpu_deterministic_ops=true")
import jax
import jax.numpy as jnp

key = jax.random.PRNGKey(0)
a = jax.random.normal(key, (512, 512), dtype=jnp.float32)


@jax.jit
def step(x):
    y = jnp.tanh(x @ x.T / 512.0)
    return y - y.mean(axis=0)


x = a
vals = []
for i in range(20):
    x = step(x)
    vals.append(float(x[i, i]))
h = hashlib.sha256(repr(vals).encode()).hexdigest()[:16]
print("result ok=1 digest=" + h)
