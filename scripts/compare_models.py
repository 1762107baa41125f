"""Compare embedding models for kip: retrieval quality and speed.

Retrieval: 30 concepts written the way kip embeds them ("<type>: <name>.
<description>") among 1,000 distractors shaped like the search benchmark's
people, and 30 questions that paraphrase one concept each without sharing
its words. Reports top-1, top-5 and mean reciprocal rank.
Speed: texts per second on one thread, one at a time and in batches of 16.

    pip install onnxruntime tokenizers numpy
    python3 scripts/compare_models.py TOKENIZER.json MODEL.onnx [MODEL.onnx ...]
"""
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

PAIRS = [("Drug","Cetirizine","An antihistamine that relieves seasonal allergies such as sneezing and itchy eyes.","pill for hay fever"),
("Drug","Ibuprofen","A nonsteroidal anti-inflammatory drug that reduces pain, fever and swelling.","something for a headache and temperature"),
("Drug","Omeprazole","Reduces stomach acid; used for heartburn and acid reflux.","burning feeling in the chest after meals"),
("Drug","Metformin","First-line medication for type 2 diabetes; lowers blood sugar.","medicine that controls glucose"),
("Drug","Atorvastatin","A statin that lowers LDL cholesterol and cardiovascular risk.","drug to bring down cholesterol"),
("Drug","Melatonin","A hormone supplement that helps regulate sleep and jet lag.","I cannot fall asleep"),
("Drug","Loperamide","Slows intestinal movement to stop diarrhea.","upset stomach with loose stools"),
("Drug","Amoxicillin","A penicillin antibiotic against bacterial infections such as strep throat.","treatment for a bacterial sore throat"),
("Drug","Salbutamol","A bronchodilator inhaler that opens the airways during an asthma attack.","help breathing when wheezing"),
("Drug","Sertraline","An antidepressant (SSRI) prescribed for depression and anxiety.","feeling very sad for weeks"),
("Preference","Dark mode","A user interface colour scheme with light text on a dark background, easier on the eyes at night.","black theme for the screen"),
("Food","Sourdough","Bread leavened with wild yeast and lactic acid bacteria, with a tangy flavour.","tangy fermented loaf"),
("Place","Kyoto","Former imperial capital of Japan, famous for temples, shrines and geisha districts.","old Japanese city with many temples"),
("Person","Marie Curie","Physicist and chemist who pioneered research on radioactivity and won two Nobel prizes.","scientist who studied radiation"),
("Tool","Git","A distributed version control system for tracking changes in source code.","software to manage code history"),
("Sport","Curling","Players slide granite stones on ice toward a target area.","game with stones on ice"),
("Animal","Axolotl","A Mexican salamander that keeps its larval features and can regrow limbs.","amphibian that regenerates legs"),
("Event","Team offsite 2026","Three-day planning retreat in the mountains with the engineering team in March.","when did we go away with colleagues to plan"),
("Preference","Window seat","The user prefers sitting next to the window on flights.","where do I like to sit on a plane"),
("Food","Kimchi","Korean side dish of salted and fermented vegetables such as napa cabbage.","spicy pickled cabbage"),
("Instrument","Cello","A large bowed string instrument played seated, held between the knees.","big violin you play sitting down"),
("Disease","Migraine","Recurrent severe headaches often with nausea and sensitivity to light.","bad head pain with light sensitivity"),
("Place","Sahara","The largest hot desert in the world, in North Africa.","huge sandy region in Africa"),
("Technology","PostgreSQL","An open-source relational database management system with SQL support.","free SQL database server"),
("Concept","Photosynthesis","Process by which plants use sunlight to make sugar from carbon dioxide and water.","how plants make food from light"),
("Person","Bob","The user's landlord, who collects rent on the first of each month.","who do I pay rent to"),
("Vehicle","Tandem bicycle","A bicycle built for two riders seated one behind the other.","bike for two people"),
("Hobby","Origami","The Japanese art of folding paper into shapes such as cranes.","paper folding craft"),
("Drink","Espresso","Concentrated coffee brewed by forcing hot water through finely ground beans.","strong small coffee"),
("Weather","Monsoon","Seasonal wind shift that brings heavy rain to South Asia.","rainy season in India"),
]

JOBS = ["chef", "nurse", "carpenter", "pilot", "teacher", "plumber", "lawyer", "baker", "farmer", "dentist"]
CITIES = ["Paris", "Lyon", "Berlin", "Munich", "Madrid", "Lisbon", "Rome", "Oslo", "Tokyo", "Lima", "Quito"]
HOBBIES = ["hiking", "chess", "knitting", "surfing", "painting", "cycling", "pottery", "sailing", "yoga", "karaoke",
           "playing the violin", "running marathons", "writing poetry", "scuba diving"]
DISTRACTORS = [
    f"Person: person_{i}. Works as a {JOBS[i % len(JOBS)]} in {CITIES[(i // 7) % len(CITIES)]}. "
    f"Enjoys {HOBBIES[(i // 3) % len(HOBBIES)]} and {HOBBIES[(i // 11) % len(HOBBIES)]}."
    for i in range(1000)
]


def session(path):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def embed(tok, sess, texts):
    encs = tok.encode_batch(texts)
    width = max(len(e.ids) for e in encs)
    ids = np.array([e.ids + [0] * (width - len(e.ids)) for e in encs], dtype=np.int64)
    mask = np.array([e.attention_mask + [0] * (width - len(e.ids)) for e in encs], dtype=np.int64)
    hidden = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    v = (hidden * mask[:, :, None]).sum(1) / mask.sum(1)[:, None]
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def rate(tok, sess, texts, batch):
    start = time.perf_counter()
    for i in range(0, len(texts), batch):
        embed(tok, sess, texts[i:i + batch])
    return len(texts) / (time.perf_counter() - start)


def main(tokenizer, models):
    tok = Tokenizer.from_file(tokenizer)
    tok.no_padding()
    tok.enable_truncation(max_length=256)
    docs = [f"{t}: {n}. {d}" for t, n, d, _ in PAIRS] + DISTRACTORS
    for path in models:
        sess = session(path)
        D = np.concatenate([embed(tok, sess, [d]) for d in docs])
        Q = np.concatenate([embed(tok, sess, [q]) for *_, q in PAIRS])
        ranks = [int(np.nonzero(np.argsort(-(D @ Q[i])) == i)[0][0]) for i in range(len(PAIRS))]
        print(f"{path}: top-1 {sum(r == 0 for r in ranks)}/{len(PAIRS)}, top-5 {sum(r < 5 for r in ranks)}/{len(PAIRS)}, "
              f"MRR {np.mean([1 / (r + 1) for r in ranks]):.3f}; "
              f"{rate(tok, sess, DISTRACTORS[:256], 1):.0f} texts/s one at a time, "
              f"{rate(tok, sess, DISTRACTORS[:256], 16):.0f} texts/s in batches of 16")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
