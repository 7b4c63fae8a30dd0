"""Step 14, translator: your model, the site's trained weights, your decoding.

Check it:  vanilla-transformer practice check translator translator.py

The check builds your make_model with the trained translator's sizes (a post-norm
model with nn.LayerNorm, tied embeddings and no generator bias), loads the trained
weights into it by name, and translates English numbers it never saw into German
with your greedy_decode.
"""

from encoder_decoder import make_model  # noqa: F401
from greedy_decode import greedy_decode  # noqa: F401
