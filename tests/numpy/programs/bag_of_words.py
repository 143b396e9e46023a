"""A bag-of-words model over a small built-in corpus, as text-mining tutorials write it
in NumPy before reaching for scikit-learn: tokens into a string array, the vocabulary by
``np.unique(..., return_inverse=True, return_counts=True)``, a document-term matrix by
``np.add.at`` on (document, word) pairs and by ``np.bincount`` of flattened indices,
TF-IDF weights, cosine similarities between documents, the top words of each document by
``np.argsort``, and the words themselves read back from the vocabulary array. Plain
NumPy; run by import swap."""
import re

import numpy as np

documents = [
    "the cat sat on the mat and the cat slept",
    "the dog chased the cat around the garden",
    "a dog and a cat can be friends",
    "numpy arrays make vectorized code fast",
    "vectorized numpy code replaces slow python loops",
    "the garden was full of slow snails and fast birds",
]
tokens = [re.findall(r"[a-z]+", doc.lower()) for doc in documents]
words = np.array([word for doc in tokens for word in doc])
doc_ids = np.repeat(np.arange(len(documents)), [len(doc) for doc in tokens])

vocabulary, word_ids, totals = np.unique(words, return_inverse=True, return_counts=True)
V, D = len(vocabulary), len(documents)
counts = np.zeros((D, V), dtype=np.int64)
np.add.at(counts, (doc_ids, word_ids), 1)
counts_bincount = np.bincount(doc_ids * V + word_ids, minlength=D * V).reshape(D, V)

tf = counts / counts.sum(axis=1, keepdims=True)
df = np.count_nonzero(counts, axis=0)
idf = np.log((1 + D) / (1 + df)) + 1
tfidf = tf * idf
tfidf /= np.linalg.norm(tfidf, axis=1, keepdims=True)
similarity = tfidf @ tfidf.T
np.fill_diagonal(similarity, -1)
nearest = similarity.argmax(axis=1)

top = np.argsort(-tfidf, axis=1, kind="stable")[:, :3]
top_words = [[str(w) for w in vocabulary[row]] for row in top]
frequent = vocabulary[np.argsort(-totals, kind="stable")[:5]]
stop = np.isin(vocabulary, ["the", "a", "and", "of", "on"])
content_share = counts[:, ~stop].sum() / counts.sum()
lengths = np.char.str_len(vocabulary)
vocabulary_index = {str(w): int(i) for i, w in enumerate(vocabulary)}
query = np.zeros(V)
for word in "fast numpy code".split():
    query[vocabulary_index[word]] += 1
scores = tfidf @ (query * idf)

RESULT = {
    "vocabulary": vocabulary.tolist(),
    "totals": totals,
    "counts": counts,
    "bincount_agrees": bool(np.array_equal(counts, counts_bincount)),
    "tfidf": tfidf,
    "nearest": nearest,
    "top_words": top_words,
    "frequent": frequent.tolist(),
    "content_share": float(content_share),
    "longest": str(vocabulary[np.argmax(lengths)]),
    "best_match": int(np.argmax(scores)),
    "scores": scores,
}
