# jax_check.py - a small JAX workload (jit, matmul, reductions, random) whose
# printed digest must not change under the library.
import hashlib
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
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
