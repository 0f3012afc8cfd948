"""bench/render_report.py renders a standalone HTML page to a cropped full-page PNG (only where Chromium is installed)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from skill_assets.lib.evaluation.report import html_document

BENCH = Path(__file__).resolve().parent.parent / "bench" / "render_report.py"


@pytest.mark.skipif(not any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")),
                    reason="no Chromium on this machine (Debian: apt-get install -y chromium)")
def test_render_crops_to_the_page(tmp_path):
    rows = "\n".join(f"| s{i} | {i}.00 |" for i in range(60))
    html = tmp_path / "r.html"
    html.write_text(html_document("t", [("Table", "| system | hit@1 |\n|---|---|\n" + rows)], {}))
    out = subprocess.run([sys.executable, str(BENCH), str(html), "--out", str(tmp_path / "r.png"), "--width", "800"],
                         capture_output=True, text=True, check=True, timeout=180).stdout.strip().splitlines()[-1]
    image = Image.open(tmp_path / "r.png")
    assert f'"width": 800, "height": {image.height}' in out
    assert 1000 < image.height < 4000  # 60 table rows: taller than a screen, far shorter than the 16000 px window
