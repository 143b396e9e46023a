"""Inference of a tiny GPT-2-shaped transformer in the style of Jay Mody's picoGPT (MIT —
its structure, not its code): token and position embeddings, pre-norm blocks with layer
norm, causal multi-head self-attention (q, k, v by ``np.split`` of one projection, heads
by ``np.split`` again, a mask from ``np.tri``), a GELU feed-forward, tied output
embeddings, and greedy decoding by ``np.argmax`` of the last position. Small random
weights from ``np.random.default_rng``. Plain NumPy; run by import swap."""
import numpy as np

n_vocab, n_ctx, n_embd, n_head, n_layer = 64, 32, 32, 4, 2
rng = np.random.default_rng(1)


def dense(n_in, n_out):
    return {"w": rng.normal(0.0, 0.2, size=(n_in, n_out)), "b": rng.normal(0.0, 0.02, size=n_out)}


def norm_params():
    return {"g": 1.0 + 0.1 * rng.standard_normal(n_embd), "b": 0.1 * rng.standard_normal(n_embd)}


params = {
    "wte": rng.normal(0.0, 0.5, size=(n_vocab, n_embd)),
    "wpe": rng.normal(0.0, 0.1, size=(n_ctx, n_embd)),
    "blocks": [{"ln_1": norm_params(), "ln_2": norm_params(),
                "attn": {"c_attn": dense(n_embd, 3 * n_embd), "c_proj": dense(n_embd, n_embd)},
                "mlp": {"c_fc": dense(n_embd, 4 * n_embd), "c_proj": dense(4 * n_embd, n_embd)}}
               for _ in range(n_layer)],
    "ln_f": norm_params(),
}


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def layer_norm(x, g, b, eps=1e-5):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return g * (x - mu) / np.sqrt(var + eps) + b


def linear(x, w, b):
    return x @ w + b


def attention(q, k, v, mask):
    scores = q @ k.T / np.sqrt(q.shape[-1]) + mask
    return softmax(scores) @ v


def self_attention(x, c_attn, c_proj):
    qkv = np.split(linear(x, **c_attn), 3, axis=-1)
    heads = [np.split(part, n_head, axis=-1) for part in qkv]
    causal = (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10
    outputs = [attention(q, k, v, causal) for q, k, v in zip(*heads)]
    return linear(np.hstack(outputs), **c_proj)


def block(x, mlp, attn, ln_1, ln_2):
    x = x + self_attention(layer_norm(x, **ln_1), **attn)
    h = gelu(linear(layer_norm(x, **ln_2), **mlp["c_fc"]))
    return x + linear(h, **mlp["c_proj"])


def forward(tokens, wte, wpe, blocks, ln_f):
    x = wte[tokens] + wpe[range(len(tokens))]
    for layer in blocks:
        x = block(x, **layer)
    return layer_norm(x, **ln_f) @ wte.T


def generate(tokens, n_new):
    tokens = list(tokens)
    for _ in range(n_new):
        logits = forward(tokens, **params)
        tokens.append(int(np.argmax(logits[-1])))
    return tokens[-n_new:]


prompt = [5, 17, 42, 8, 23]
logits = forward(prompt, **params)
probs = softmax(logits)
generated = generate(prompt, 6)

# Causality: the logits of the prompt's prefix do not depend on the tokens after it.
prefix_logits = forward(prompt[:3], **params)
causal_ok = np.allclose(prefix_logits, logits[:3])
entropy = -np.sum(probs * np.log(probs), axis=-1)

RESULT = {
    "logits": logits,
    "probs_sum": probs.sum(axis=-1),
    "generated": generated,
    "causal_ok": bool(causal_ok),
    "entropy": entropy,
    "top5_last": np.argsort(logits[-1])[::-1][:5],
}
