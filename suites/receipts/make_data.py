"""Draw the receipt-reading suite's ten receipts with Pillow, and write the dataset that names them.

The images are the project's own: plain receipts drawn here with Pillow's built-in bitmap font, no third-party
image, photo or font. Each is a small grey-on-white PNG; the dataset (datasets/v1.json) names each by its path
relative to the dataset file (dataset.images: [receipt]) with the shop and the total a reader should find. The
drawing is deterministic, so running this again rewrites the same bytes (checked by the suite's test), and the
dataset's fingerprint, which covers every image's SHA-256, stays as recorded.

Usage (from the project root; needs Pillow, the `media` extra):  python suites/receipts/make_data.py
"""

from __future__ import annotations

import json
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATASETS = HERE / "datasets"

# (case id, shop, items as (name, price in cents), the currency sign): the totals are the items' sums
RECEIPTS = [
    ("corner-cafe", "CORNER CAFE", [("Flat white", 340), ("Croissant", 260)], "$"),
    ("green-grocer", "GREEN GROCER", [("Apples 1kg", 299), ("Carrots", 149), ("Leeks", 210)], "$"),
    ("book-nook", "BOOK NOOK", [("Paperback", 1299)], "$"),
    ("hardware-hub", "HARDWARE HUB", [("Screws x50", 475), ("Hinge", 350), ("Glue", 525)], "$"),
    ("pizza-place", "PIZZA PLACE", [("Margherita", 1100), ("Cola", 250)], "$"),
    ("pharmacy", "CITY PHARMACY", [("Plasters", 399), ("Sun cream", 1250)], "$"),
    ("bakery", "DAILY BAKERY", [("Sourdough", 450), ("Bagels x4", 380), ("Muffin", 225)], "$"),
    ("taxi", "BLUE TAXI", [("Fare", 1860), ("Tip", 300)], "$"),
    ("cinema", "STAR CINEMA", [("Tickets x2", 2400), ("Popcorn", 650)], "$"),
    ("florist", "PETAL FLORIST", [("Tulips", 1500), ("Card", 295)], "$"),
]


def total(items: list[tuple[str, int]]) -> str:
    """The receipt's total as printed: dollars with two decimals."""
    return f"{sum(price for _, price in items) / 100:.2f}"


def draw(shop: str, items: list[tuple[str, int]], sign: str) -> bytes:
    """One receipt as PNG bytes: the shop, the items with their prices, a rule and the total."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default_imagefont()  # Pillow's own bitmap font: the same glyphs on every machine
    lines = [shop, "", *(f"{name:<14}{sign}{price / 100:>7.2f}" for name, price in items), "-" * 22,
             f"{'TOTAL':<14}{sign}{total(items):>7}"]
    image = Image.new("L", (160, 14 * len(lines) + 16), color=255)
    pen = ImageDraw.Draw(image)
    for row, line in enumerate(lines):
        pen.text((8, 8 + 14 * row), line, fill=40, font=font)
    out = BytesIO()
    image.save(out, format="PNG", optimize=True)  # no timestamps or text chunks: the same bytes every time
    return out.getvalue()


def main() -> None:
    cases = []
    for case_id, shop, items, sign in RECEIPTS:
        path = DATASETS / "images" / f"{case_id}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(draw(shop, items, sign))
        cases.append({"id": case_id, "receipt": f"images/{case_id}.png", "shop": shop, "total": total(items)})
    dataset = {"name": "receipts", "version": "1", "cases": cases}
    (DATASETS / "v1.json").write_text(json.dumps(dataset, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} receipts to {DATASETS}")


if __name__ == "__main__":
    main()
