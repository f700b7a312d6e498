"""Draw the block structure of L and the cblk tree of a small 2D problem (needs matplotlib).

Run: python examples/draw_structure.py [OUTPUT.png]
"""

import sys

import pastixpy
from pastixpy.gallery import laplacian

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("this example needs matplotlib: pip install matplotlib")

an = pastixpy.analyze(laplacian((24, 24)), split=(16, 32))
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 6))
an.symbol.draw(left)
an.draw_tree(right)
out = sys.argv[1] if len(sys.argv) > 1 else "structure.png"
fig.savefig(out, dpi=120, bbox_inches="tight")
print(f"wrote {out}: {an.symbol}")
