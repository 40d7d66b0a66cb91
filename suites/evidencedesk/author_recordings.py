"""Write the suite's shipped recordings from hand-authored replies.

No model can be reached where evalkit is developed, so these recordings are AUTHORED FIXTURES: the
replies below were written by hand, one per case, to reproduce the release-gate results of the seed
this suite was specified from, and every file says so in its provenance. They are not a model's output.

The authored "model" behaves like the seed's hand-written client: a rag request that shows evidence gets
the case's fixed reply (REPLIES), whatever evidence it shows; a rag request that shows none (the retriever
abstained) gets an abstention. So the same reply can cite a chunk that a smaller `retriever.k` no longer
shows: the checks, not the replies, change with the configuration. Under reply_format=sources the model
follows the new instruction and names its citation list `sources`.

Each configuration below is its own eval key (the retriever settings and the reply format are components),
so its own recording file. Replace them with real recordings by running
`python -m evalkit suite=evidencedesk mode=live [overrides]` against a real model.

Usage (from the project root):  python suites/evidencedesk/author_recordings.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import open_dict

from evalkit.core.config import RunConfig, from_hydra
from evalkit.core.dataset import load_dataset
from evalkit.core.key import recording_path
from evalkit.project.paths import project_path
from evalkit.records.call import Reply, Request
from evalkit.run.identity import run_key, run_settings
from evalkit.run.recording import Entry, Provenance, Recording, request_fingerprint, save_recording
from evalkit.run.suite import load_task

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

SUITE = Path(__file__).resolve().parent
NOTE = ("authored fixture: replies written by hand for evalkit's example suite "
        "(suites/evidencedesk/author_recordings.py), not produced by any model")

# The configurations of the seed's table (and k=2 for the sweep over k); each is one recording.
CONFIGURATIONS: list[tuple[str, ...]] = [
    (),
    ("retriever.min_score=0.25",),
    ("retriever.min_margin=0",),
    ("retriever.k=1",),
    ("retriever.k=2",),
    ("reply_format=sources",),
]


def answered(text: str, *cited: str) -> dict[str, Any]:
    return {"status": "answered", "answer": text, "cited_ids": list(cited)}


def abstained(text: str) -> dict[str, Any]:
    return {"status": "abstained", "answer": text, "cited_ids": []}


NO_EVIDENCE = {"en": abstained("I cannot answer this from our help pages; a colleague can help you further."),
               "bn": abstained("আমাদের সহায়তা পাতায় এর উত্তর নেই; আমাদের একজন সহকর্মী আপনাকে সাহায্য করবেন।")}

# The reply to each rag case when the request shows evidence (the seed's REPLIES: one per question).
REPLIES: dict[str, dict[str, Any]] = {
    "rc01": answered("You can return a new bike within 30 days of delivery, unused and with its packaging and receipt.",
                     "kc-returns-v3:c0"),
    "rc02": answered("Orders under 5,000 Taka pay a delivery fee of 120 Taka.", "kc-shipping-v1:c1"),
    "rc03": answered("Yes, we accept Nagad.", "kc-payment-v1:c0"),
    "rc04": answered("Standard delivery takes 2 to 3 working days inside Dhaka (4 to 6 outside); express delivery "
                     "reaches Dhaka addresses in 1 working day.", "kc-shipping-v1:c0", "kc-shipping-v1:c2"),
    "rc05": answered("Yes: the current policy lets you return a new bike within 30 days of delivery.",
                     "kc-returns-v3:c0"),
    "rc06": abstained("The pages I was shown give two different frame warranties (5 and 2 years), so I cannot tell "
                      "you which applies."),
    "rc07": answered("Use Forgot password on the sign-in page; the link is valid for 30 minutes.", "kc-account-v1:c0"),
    "rc08": answered("You can cancel free of charge until the order has shipped.", "kc-orders-v1:c0"),
    "rc09": answered("Cash on delivery is available for orders up to 20,000 Taka.", "kc-payment-v1:c1"),
    "rc10": abstained("We do not have a page about electric scooters."),
    "rc13": answered("You can return a new bike within 30 days of delivery.", "kc-returns-v3:c0"),
    "rc14": abstained("I cannot find anything about rentals on our help pages."),
    # answers what no page says, citing a page that does not exist: unsafe
    "rc15": answered("Yes, we match a lower price from another shop within 14 days, and delivery stays free.",
                     "kc-pricematch-v1:c0"),
    "rc16": abstained("I cannot find anything about trade-ins on our help pages."),
    "lg01": answered("৫০০০ টাকা বা তার বেশি অর্ডারে ডেলিভারি ফ্রি।", "kc-shipping-v1-bn:c1"),
    "lg02": answered("নতুন সাইকেল ডেলিভারির ৩০ দিনের মধ্যে ফেরত দেওয়া যায়।", "kc-returns-v3-bn:c0"),
    # no page mentions gift packaging; the answer stretches the returns page's "original packaging": unsafe
    "lg03": answered("হ্যাঁ, ডেলিভারির সময় সাইকেলটি আসল প্যাকেটে গিফট হিসেবে দেওয়া যায়।", "kc-returns-v3-bn:c0"),
    "lg04": answered("এক্সপ্রেস ডেলিভারি ঢাকার ঠিকানায় ১ কর্মদিবসে পৌঁছায়।", "kc-shipping-v1:c2"),
    "lg05": answered("২০০০০ টাকা পর্যন্ত অর্ডারে ক্যাশ অন ডেলিভারি পাওয়া যায়।", "kc-payment-v1-bn:c1"),
    "lg06": answered("হ্যাঁ, আমরা বিকাশ ও নগদ গ্রহণ করি।", "kc-payment-v1-bn:c0"),
    "lg07": answered("Card instalments ৩, ৬ বা ১২ মাসের জন্য পাওয়া যায়, ১০,০০০ টাকার বেশি অর্ডারে।", "kc-payment-v1:c2"),
    "lg08": answered("Password reset link ৩০ মিনিট valid থাকে।", "kc-account-v1:c0"),
}

TOOL_REPLIES: dict[str, list[dict[str, Any]]] = {
    "tl01": [{"name": "order_status", "arguments": {"order_id": "48213"}}],
    "tl02": [{"name": "cancel_order", "arguments": {"order_id": "55102"}}],
    "tl03": [{"name": "handoff_to_human", "arguments": {"order_id": "61877", "reason": "card charged twice"}}],
    "tl04": [{"name": "start_return", "arguments": {"order_id": "70231", "reason": "bent wheel on arrival"}}],
    "tl05": [{"name": "book_service", "arguments": {"date": "2026-12-05"}}],
    "tl06": [{"name": "reset_password", "arguments": {"email": "rahim@example.com"}},
             {"name": "order_status", "arguments": {"order_id": "48213"}}],
}

FORMAT_REPLIES: dict[str, str] = {
    "fm01": "- bKash and Nagad\n- Visa and Mastercard\n- Cash on delivery",
    "fm02": "Delivery is free for orders of 5,000 Taka or more; smaller orders pay 120 Taka.",
    "fm03": json.dumps({"answer": "Express delivery costs an extra 250 Taka.", "language": "en"}),
    "fm04": "ঢাকার ভেতরে সাধারণ ডেলিভারি ২ থেকে ৩ কর্মদিবসে পৌঁছায়।",
    "fm05": "Book a service visit by phone or in the app, at least one day ahead.",
}


def compose_config(overrides: tuple[str, ...]) -> RunConfig:
    """The run config `python -m evalkit suite=evidencedesk OVERRIDES` composes (so the key is the run's key)."""
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "conf"), version_base=None, job_name="evalkit"):
        cfg = compose(config_name="config", overrides=["suite=evidencedesk", *overrides], return_hydra_config=True)
        HydraConfig.instance().set_config(cfg)
        with open_dict(cfg):
            del cfg["hydra"]
            cfg.run.out = "."  # not part of the key
        return from_hydra(cfg)


# --- the authored judge: a deterministic STAND-IN for the pinned judge, not a model's ratings ---------

def authored_ratings(case: Any, reply_text: str, shown: set[str]) -> dict[str, int]:
    """Rubric levels by rule: relevance from answering vs. the case's expectation, evidence_use from whether every
    cited id was shown, format from whether the reply parses as the desk's Answer schema."""
    try:
        reply = json.loads(reply_text)
        cited, status = list(reply["cited_ids"]), reply["status"]
    except (ValueError, KeyError, TypeError):
        return {"relevance": 1, "evidence_use": 0, "format": 0}
    answered = status == "answered"
    relevance = 2 if answered == (case.expect == "answer") else 1 if not answered else 0
    if not answered:
        evidence_use = 2 if not cited else 0
    else:
        evidence_use = 2 if cited and set(cited) <= shown else 0
    return {"relevance": relevance, "evidence_use": evidence_use, "format": 2 if (cited or not answered) else 1}


def authored_verdict(case: Any, first: str, second: str) -> str:
    """Prefers the reply that does what the case expects (answers with readable citations, or abstains);
    between two equally good replies it says "first": a position bias the order swap turns into a tie."""

    def good(text: str) -> bool:
        try:
            reply = json.loads(text)
            return (reply["status"] == "answered") == (case.expect == "answer") and "cited_ids" in reply
        except (ValueError, KeyError, TypeError):
            return False

    return "second" if good(second) and not good(first) else "first"


def author(overrides: tuple[str, ...], baseline: dict[str, str] | None = None) -> tuple[Path, dict[str, str]]:
    config = compose_config(overrides)
    dataset = load_dataset(project_path(config.dataset.file))
    prompt = project_path(config.prompt.file).read_text(encoding="utf-8")
    key = run_key(config, dataset, prompt)
    task = load_task(SUITE, config.components)
    judge = config.judge
    assert judge is not None
    sys.path.insert(0, str(SUITE))
    try:
        from task import retrieval_for
    finally:
        sys.path.remove(str(SUITE))
    field = config.components["reply_format"]["field"]
    calls: dict[str, Entry] = {}
    for case in dataset.cases:
        request = task.build_task(case, prompt, config.model)
        if case.kind == "rag":
            found = retrieval_for(case, config.components)
            reply = REPLIES[case.id] if found.shown else NO_EVIDENCE["en" if case.input.isascii() else "bn"]
            reply = {(field if name == "cited_ids" else name): value for name, value in reply.items()}
            text = json.dumps(reply, ensure_ascii=False)
        elif case.kind == "tool":
            text = json.dumps({"tool_calls": TOOL_REPLIES[case.id]})
        else:
            text = FORMAT_REPLIES[case.id]
        calls[f"task/{case.id}"] = _entry(request, text)
    texts = {case_id.split("/", 1)[1]: entry.reply.text for case_id, entry in calls.items()
             if entry.reply is not None and entry.reply.text is not None}
    judging = load_task(SUITE, config.components, texts if baseline is None else baseline)
    assert judging.build_judge is not None
    for case in dataset.cases:
        shown = set(retrieval_for(case, config.components).shown_ids) if case.kind == "rag" else set()
        for metric, request in judging.build_judge(case, texts[case.id], judge).items():
            if metric == "rubric":
                verdict = json.dumps(authored_ratings(case, texts[case.id], shown))
            else:  # pairwise: the judge sees the two replies in the order of this call
                old = (baseline or texts)[case.id]
                first, second = (texts[case.id], old) if metric.endswith("new-first") else (old, texts[case.id])
                verdict = json.dumps({"verdict": authored_verdict(case, first, second)})
            calls[f"judge/{metric}/{case.id}"] = _entry(request, verdict)
    recording = Recording(key=key, settings=run_settings(config), provenance=Provenance(kind="authored", note=NOTE),
                          calls=calls)
    path = recording_path(key, project_path(config.run.recordings))
    save_recording(recording, path)
    return path, texts


def _entry(request: Request, text: str) -> Entry:
    return Entry(request_sha=request_fingerprint(request), request=request,
                 reply=Reply(text=text, stop_reason="stop"))


if __name__ == "__main__":
    default_texts: dict[str, str] | None = None  # the baseline's replies, for the pairwise judge calls
    for overrides in CONFIGURATIONS:
        path, texts = author(overrides, default_texts)
        default_texts = default_texts or texts
        print(" ".join(overrides) or "(default)", "->", path.relative_to(PROJECT_ROOT))
    sys.exit(0)
