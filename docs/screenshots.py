"""`make screenshots`: what a pull request gets from the App, as pictures for the README.

#24817 rebuilt on the real ExecuTorch tree (bench/seed_prs, from the mirror that
PR_CHECK_EXECUTORCH_MIRROR names) is reviewed by the current code; without a mirror, the bundled
example PR (#24817's situation in miniature). The App's own payloads
(the review body and inline comments from `plan_review`, the check run from `render_check_run`)
are rendered with GitHub's Markdown renderer (cmark-gfm, through `cmarkgfm`) into a plain page in
GitHub's layout, and Debian's headless Chromium takes the screenshot:

    apt-get install -y chromium && make screenshots   # writes docs/screenshots/*.png

Nothing here is drawn by hand: rerun it after a change to the rules or the renderers.
"""

from __future__ import annotations

import html
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options

from bot.render.check_run import render_check_run
from bot.render.github_review import place_finding, placement_is_valid, plan_review
from fixtures.cases import build_case_repository
from pr_check.review import review_repository

CASE = "pr24817-cuda-outside-fbcode"
SEED_PR = 24817
DEFAULT_MIRROR = "/work/.mirror/pytorch+executorch/repo"
OUT = Path(__file__).resolve().parent / "screenshots"
WIDTH = 980
CONTEXT_LINES = 4  # diff lines shown above a one-line comment, as GitHub shows a hunk's tail

# Self-written, in the spirit of GitHub's light theme: enough for tables, code and suggestion blocks.
STYLE = (
    """
body { margin: 0; padding: 16px; background: #fff; color: #1f2328; width: %dpx;
       font: 14px/1.5 -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
.box { border: 1px solid #d0d7de; border-radius: 6px; margin-bottom: 16px; overflow: hidden; }
.head { background: #f6f8fa; border-bottom: 1px solid #d0d7de; padding: 8px 16px; font-weight: 600; }
.head .state { font-weight: 400; color: #59636e; }
.badge { display: inline-block; border-radius: 2em; padding: 0 10px; color: #fff; font-size: 12px; line-height: 22px; }
.failure { background: #d1242f; } .success { background: #1a7f37; } .neutral { background: #59636e; }
.body { padding: 8px 16px; }
.body table { border-collapse: collapse; margin: 8px 0; }
.body th, .body td { border: 1px solid #d0d7de; padding: 4px 10px; }
.body th { background: #f6f8fa; }
code { font: 12px "DejaVu Sans Mono", monospace; background: #eff1f3; padding: 1px 4px; border-radius: 4px; }
pre { background: #f6f8fa; padding: 10px; border-radius: 6px; overflow: hidden; }
pre code { background: none; padding: 0; }
pre[lang="suggestion"] { border: 1px solid #1a7f37; background: #dafbe1; }
pre[lang="suggestion"]::before { content: "Suggested change"; display: block; font: 600 12px sans-serif; margin-bottom: 4px; }
.diff { font: 12px/20px "DejaVu Sans Mono", monospace; border-bottom: 1px solid #d0d7de; }
.diff div { white-space: pre; padding: 0 8px; }
.diff .add { background: #e6ffec; }
.diff .n { color: #59636e; display: inline-block; width: 40px; text-align: right; margin-right: 12px; }
details summary { cursor: default; }
"""  # noqa: UP031 - the CSS's own braces would all need doubling in an f-string or str.format
    % WIDTH
)


def markdown(text: str) -> str:
    """GitHub-flavoured Markdown to HTML, as GitHub renders comments (tables, fenced code, autolinks)."""
    return cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)


def page(title: str, boxes: list[str]) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>{''.join(boxes)}</body></html>"
    )


def review_page(report, plan, head_text) -> str:
    """The review as the pull request's conversation shows it: its body, then each inline comment
    under the diff lines it sits on."""
    state = "requested changes" if plan.event == "REQUEST_CHANGES" else "reviewed"
    boxes = [
        f"<div class='box'><div class='head'>pr-check <span class='state'>{state}</span></div>"
        f"<div class='body'>{markdown(plan.body)}</div></div>"
    ]
    changed = {change.path: change for change in report.changes.files}
    for comment in plan.comments:
        lines = (head_text(comment.path) or "").splitlines()
        added = changed[comment.path].added if comment.path in changed else frozenset()
        first = comment.start_line or max(1, comment.line - CONTEXT_LINES + 1)  # a range comment shows its range
        diff = "".join(
            f"<div class='{'add' if number in added else ''}'><span class='n'>{number}</span>"
            f"{'+' if number in added else ' '} {html.escape(lines[number - 1])}</div>"
            for number in range(first, comment.line + 1)
            if number <= len(lines)
        )
        boxes.append(
            f"<div class='box'><div class='head'>{html.escape(comment.path)}</div>"
            f"<div class='diff'>{diff}</div><div class='body'>{markdown(comment.body)}</div></div>"
        )
    return page("pr-check review", boxes)


def check_run_page(report) -> str:
    """The `pr-check` check run's page: conclusion, title, summary and text."""
    off_diff = [
        f
        for f in report.findings
        if (placement := place_finding(f, report.changes)) is None or not placement_is_valid(placement, report.changes)
    ]
    output = render_check_run(
        findings=report.findings,
        off_diff=off_diff,
        suppressed_count=len(report.suppressed),
        base_sha=report.base,
        head_sha=report.head,
        smoke_reasons=report.smoke.reasons,
        full_report_pointer="",
        fail_level=report.fail_level,
        unevaluated=report.stats.unevaluated,
        shim_stand_ins=report.stats.shim_stand_ins,
    )
    badge = f"<span class='badge {output.conclusion}'>{output.conclusion}</span>"
    return page(
        "pr-check check run",
        [
            f"<div class='box'><div class='head'>pr-check {badge} <span class='state'>{html.escape(output.title)}</span></div>"
            f"<div class='body'>{markdown(output.summary)}{markdown(output.text)}</div></div>"
        ],
    )


def screenshot(chromium: str, source: Path, target: Path) -> None:
    """Headless Chromium at a tall window, then the blank space below the content cropped away."""
    from PIL import Image, ImageChops

    subprocess.run(
        [
            chromium,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--window-size={WIDTH + 32},6000",
            f"--screenshot={target}",
            source.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    with Image.open(target) as image:
        rgb = image.convert("RGB")
        box = ImageChops.difference(rgb, Image.new("RGB", rgb.size, (255, 255, 255))).getbbox()
        if box is not None:
            rgb.crop((0, 0, rgb.width, min(rgb.height, box[3] + 16))).save(target, optimize=True)


def main() -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("make screenshots: needs Debian's headless Chromium: apt-get install -y chromium", file=sys.stderr)
        return 2
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pr-check-screenshots-") as directory:
        work = Path(directory)
        mirror = Path(os.environ.get("PR_CHECK_EXECUTORCH_MIRROR", DEFAULT_MIRROR))
        if (mirror / "objects").is_dir():
            from bench.seed_prs import SEED_PRS, build_commits

            repo, commits = build_commits(mirror, work)
            seed = next(pr for pr in SEED_PRS if pr.number == SEED_PR)
            base, head = commits[seed.base], commits[seed.head]
            print(f"#{SEED_PR} rebuilt on the real tree: {base[:12]}..{head[:12]}")
        else:
            print(f"no ExecuTorch mirror at {mirror}: the bundled example PR instead", file=sys.stderr)
            repo, base, head = build_case_repository(CASE, work / "pr")
        report = review_repository(repo, base, head, cache_dir=work / "cache")
        plan = plan_review(report.findings, report.changes, (), (), head, inline_level=report.inline_level)

        def head_text(path: str) -> str | None:
            shown = subprocess.run(["git", "-C", str(repo), "show", f"{head}:{path}"], capture_output=True, text=True)
            return shown.stdout if shown.returncode == 0 else None

        pages = {"review": review_page(report, plan, head_text), "check-run": check_run_page(report)}
        for name, text in pages.items():
            source = work / f"{name}.html"
            source.write_text(text, encoding="utf-8")
            screenshot(chromium, source, OUT / f"{name}.png")
            print(f"wrote {OUT / f'{name}.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
