"""A small deterministic agent for the sentiment example: it reads the prompt on stdin,
finds the quoted text, and writes 'positive' or 'negative' to result.txt by keywords.

It stands in for a model that classifies every row correctly, so the suite shows what the
mislabelled row r3 does to the metrics (accuracy 0.667, macro_f1 0.667, recall.positive 1.0).
"""

import re
import sys

POSITIVE = ("fantastic", "love", "amazing", "excellent", "great", "wonderful")
NEGATIVE = ("terrible", "not recommend", "awful", "bad", "poor", "worst")

prompt = sys.stdin.read()
quoted = re.search(r'Text: "(.*)"', prompt, re.DOTALL)
text = (quoted.group(1) if quoted else prompt).lower()
score = sum(word in text for word in POSITIVE) - sum(word in text for word in NEGATIVE)
label = "positive" if score > 0 else "negative"
with open("result.txt", "w", encoding="utf-8") as handle:
    handle.write(label)
print(label)
