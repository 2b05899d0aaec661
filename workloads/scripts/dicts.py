"""Interpreter workload for Veil's trace suite: dictionaries, strings and sorting in plain Python
(the kind of object-heavy heap the memcrypt notes found rich in frequent values).
Usage: python3 -I dicts.py N. Deterministic: its own generator, no hashing of str (ints keys)."""
import sys

n = int(sys.argv[1])
state = 12345


def rnd():
    global state
    state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    return state >> 33


syll = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ve", "zu", "an", "or"]
words = ["".join(syll[(i * 7 + k * 3) % len(syll)] for k in range(1 + i % 4)) + str(i % 97) for i in range(512)]
counts = {}
index = {}
records = []
for i in range(n):
    w = words[rnd() % len(words)]
    counts[w] = counts.get(w, 0) + 1
    key = rnd() % (n // 2 + 1)
    index.setdefault(key, []).append(i)
    if i % 7 == 0:
        records.append({"id": i, "word": w, "len": len(w), "tags": [w[:2], w[-2:]]})
top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
joined = sum(len(v) for v in index.values())
text = " ".join(r["word"] for r in records)
print(top[0], joined, len(records), len(text.split()))
