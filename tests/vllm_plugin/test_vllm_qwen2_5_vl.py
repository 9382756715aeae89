"""The vLLM plugin on Qwen2.5-VL (window attention): keep-all identity, the same tokens as compress/allocate, the
transformers path's logprobs, batches, multi-image prompts, bad requests, cache keys. One engine for the module."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm", reason="vllm not installed (the plugin's tests run in .venv-vllm: bash .ci/vllm_env.sh)")

from plugin_checks import (  # noqa: E402
    assert_logprobs_close,
    chat_prompt,
    close_engine,
    generate,
    image,
    open_engine,
    processor_keeps,
    request,
    transformers_path,
)

FAMILY = "qwen2.5-vl"
QUESTION = "What is the total amount due?"


@pytest.fixture(scope="module")
def engine(checkpoints):
    llm = open_engine(checkpoints[FAMILY])
    yield llm, checkpoints[FAMILY]
    close_engine(llm)


def test_plugin_class_is_registered(engine):
    llm, _ = engine
    assert llm.apply_model(lambda model: type(model).__name__) == ["ArrCocQwen2_5_VLForConditionalGeneration"]


def test_keep_all_is_vllms_own_result(engine):
    """budget 1.0 through the foveated path == no options (vLLM's own path): counts, positions, tokens, logprobs."""
    llm, folder = engine
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    own, kept_all = generate(
        llm, [request(prompt, [img], None), request(prompt, [img], {"budget": 1.0, "mode": "texture"})]
    )
    assert kept_all["prompt_ids"] == own["prompt_ids"]  # same placeholder count
    assert kept_all["tokens"] == own["tokens"]
    assert kept_all["logprobs"] == own["logprobs"]  # bit-identical: same kernels on the same rows
    assert kept_all["prompt_logprobs"][1:] == own["prompt_logprobs"][1:]  # every position's M-RoPE the same


@pytest.mark.parametrize("budget", [0.22, 40])
def test_partial_budget_matches_compress_and_allocate(engine, budget):
    """Same image, question, config -> the tokens compress(foveate=True) keeps; the logprobs of its path."""
    llm, folder = engine
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    options = {"budget": budget, "mode": "texture"}
    keeps, _ = processor_keeps(llm, prompt, [img], options)
    hf_keeps, hf_ids, hf_lp = transformers_path(folder, FAMILY, prompt, [img], budget)
    assert [k.tolist() for k in keeps] == [k.tolist() for k in hf_keeps]
    (got,) = generate(llm, [request(prompt, [img], options)])
    assert got["prompt_ids"] == hf_ids  # the pruned prompt: k placeholders
    assert_logprobs_close(got["prompt_logprobs"], hf_lp)

    from arr_coc import allocate

    a = allocate(img, QUESTION, budget=budget, family=FAMILY, mode="texture", max_pixels=160 * 28 * 28)
    assert a.keep.tolist() == keeps[0].tolist()


def test_text_mode_matches_compress_with_the_ocr_prior(engine):
    """mode 'text' (the documents path: OCR prior, words kept whole) keeps what compress(text_prior=True) keeps."""
    pytest.importorskip("rapidocr", reason="the [ocr] extra is not installed")
    llm, folder = engine
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    keeps, _ = processor_keeps(llm, prompt, [img], {"budget": 0.22, "mode": "text"})
    hf_keeps, _, _ = transformers_path(folder, FAMILY, prompt, [img], 0.22, text_prior=True)
    assert [k.tolist() for k in keeps] == [k.tolist() for k in hf_keeps]
    texture, _ = processor_keeps(llm, prompt, [img], {"budget": 0.22, "mode": "texture"})
    assert keeps[0].tolist() != texture[0].tolist()  # the OCR prior did change the decision


@pytest.mark.parametrize("budget", [0.22, "adaptive"])
def test_relevance_checkpoint_matches_compress_with_that_realizer(engine, tmp_path, budget):
    """{"relevance": folder}: the plugin keeps what compress(text_prior=True, realizer=from_pretrained(folder)) keeps,
    and not what the default realizer keeps. The checkpoint's box scorer is a seeded random linear map (unlike the
    rules) and its adaptive tiers (8/16/32/64) are not the default ones, so "adaptive" also checks that the
    checkpoint's config resolves the budget, as in compress."""
    pytest.importorskip("rapidocr", reason="the [ocr] extra is not installed")
    import torch

    from arr_coc.config import RelevanceConfig
    from arr_coc.reading.matching.learned import BoxScorer
    from arr_coc.realizing import Realizer

    torch.manual_seed(0)
    scorer = BoxScorer(hidden=0)
    with torch.no_grad():
        scorer.net.weight.copy_(torch.randn_like(scorer.net.weight))
    Realizer(RelevanceConfig(adaptive_tiers=(8, 16, 32, 64)), box_scorer=scorer).save_pretrained(tmp_path)
    llm, folder = engine
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    options = {"relevance": str(tmp_path), "budget": budget, "mode": "text"}
    keeps, _ = processor_keeps(llm, prompt, [img], options)
    learned = Realizer.from_pretrained(tmp_path)
    hf_keeps, hf_ids, _ = transformers_path(folder, FAMILY, prompt, [img], budget, text_prior=True, realizer=learned)
    assert [k.tolist() for k in keeps] == [k.tolist() for k in hf_keeps]
    (got,) = generate(llm, [request(prompt, [img], options)])
    assert got["prompt_ids"] == hf_ids  # the engine's request: k placeholders, the same pruned prompt
    rules, _ = processor_keeps(llm, prompt, [img], {"budget": budget, "mode": "text"})
    assert keeps[0].tolist() != rules[0].tolist()  # the checkpoint did change the decision


def test_question_from_the_turn_equals_explicit_query(engine):
    llm, folder = engine
    img = image("receipt.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    from_turn, h1 = processor_keeps(llm, prompt, [img], {"budget": 0.22, "mode": "texture"})
    explicit, h2 = processor_keeps(llm, prompt, [img], {"budget": 0.22, "mode": "texture", "query": QUESTION})
    assert from_turn[0].tolist() == explicit[0].tolist()
    other, h3 = processor_keeps(
        llm, chat_prompt(folder, [img], "Who is the vendor?"), [img], {"budget": 0.22, "mode": "texture"}
    )
    assert h1 != h3  # the question is part of the cache key: another question never reuses this decision
    assert h1 != processor_keeps(llm, prompt, [img], {"budget": 0.33, "mode": "texture"})[1]  # so are the options


def test_batch_of_different_budgets_questions_and_image_counts(engine):
    """Each request of a mixed batch gets exactly what it gets alone (no request disturbs another)."""
    llm, folder = engine
    inv, rec, chart = image("invoice.jpg"), image("receipt.jpg"), image("chart.jpg")
    reqs = [
        request(chat_prompt(folder, [inv], QUESTION), [inv], {"budget": 0.22, "mode": "texture"}),
        request(
            chat_prompt(folder, [rec, chart], "Which month is highest?"),
            [rec, chart],
            {"budget": 0.5, "mode": "texture"},
        ),
        request(chat_prompt(folder, [chart], "Describe the chart."), [chart], None),
        request(
            chat_prompt(folder, [inv, rec, chart], "Compare them."),
            [inv, rec, chart],
            {"budget": 12, "mode": "texture"},
        ),
    ]
    together = generate(llm, reqs)
    for req, got in zip(reqs, together, strict=True):
        (alone,) = generate(llm, [req])
        assert got["prompt_ids"] == alone["prompt_ids"]
        assert got["tokens"] == alone["tokens"]
        assert_logprobs_close(got["logprobs"] + [0.0], alone["logprobs"] + [0.0], atol=1e-4)


def test_multi_image_prompt_counts_and_matches_compress(engine):
    llm, folder = engine
    imgs = [image("receipt.jpg"), image("chart.jpg")]
    prompt = chat_prompt(folder, imgs, "Which month is highest?")
    options = {"budget": 0.33, "mode": "texture"}
    keeps, _ = processor_keeps(llm, prompt, imgs, options)
    hf_keeps, hf_ids, hf_lp = transformers_path(folder, FAMILY, prompt, imgs, 0.33)
    assert [k.tolist() for k in keeps] == [k.tolist() for k in hf_keeps]
    (got,) = generate(llm, [request(prompt, imgs, options)])
    assert got["prompt_ids"] == hf_ids
    assert_logprobs_close(got["prompt_logprobs"], hf_lp)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"budget": 1.5}, "budget"),
        ({"budget": 0.2, "colour": "red"}, "unknown option 'colour'"),
        ({"mode": "psychic"}, "mode"),
        ({"enabled": "yes"}, "enabled"),
        ("cheap", "must be an object"),
    ],
)
def test_bad_options_are_one_clear_error_and_the_engine_goes_on(engine, options, message):
    llm, folder = engine
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    with pytest.raises(ValueError, match="arr_coc") as err:
        llm.generate(
            [{"prompt": prompt, "multi_modal_data": {"image": img}, "mm_processor_kwargs": {"arr_coc": options}}]
        )
    assert message in str(err.value)
    (after,) = generate(llm, [request(prompt, [img], {"budget": 0.22, "mode": "texture"})])
    assert len(after["tokens"]) == 4


def test_enabled_false_is_unpruned(engine):
    llm, folder = engine
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    own, off = generate(llm, [request(prompt, [img], None), request(prompt, [img], {"budget": 0.1, "enabled": False})])
    assert off == own


def pruned_batch(llm, prompt: str, images: list, options: dict):
    """The batch the model runner hands the encoder for one request's images (vLLM's own grouping)."""
    from vllm.multimodal import MULTIMODAL_REGISTRY
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs
    from vllm.multimodal.utils import group_and_batch_mm_kwargs

    proc = MULTIMODAL_REGISTRY.create_processor(llm.llm_engine.model_config)
    ids = proc.info.get_tokenizer().encode(prompt, add_special_tokens=False)
    res = proc.apply(
        ProcessorInputs(prompt=ids, mm_data_items=proc.info.parse_mm_data({"image": images}),
                        hf_processor_mm_kwargs={"arr_coc": options} if options else {}),
        TimingContext(),
    )  # fmt: skip
    ((modality, n, batch),) = list(group_and_batch_mm_kwargs([("image", it) for it in res["mm_kwargs"]["image"]]))
    return batch


def test_encoder_cuda_graphs_run_pruned_images_eagerly(engine):
    """cudagraph_mm_encoder: vLLM's own graph manager, given a pruned batch, runs every pruned image eagerly (the
    manager holds no captured graph here, so an image sent to a graph would fail its ``assert graph_output``), splits
    the output by the KEPT counts, and gives what the eager path gives; a pruned batch at a graph fails loudly.
    (Before: the manager sized pruned images at their full grid and vLLM took the first k of the full rows.)"""
    import torch
    from vllm.v1.worker.encoder_cudagraph import EncoderCudaGraphManager

    llm, folder = engine
    imgs = [image("invoice.jpg"), image("chart.jpg")]
    prompt = chat_prompt(folder, imgs, QUESTION)
    batch = pruned_batch(llm, prompt, imgs, {"budget": 0.22, "mode": "texture"})
    full = pruned_batch(llm, prompt, imgs, None)

    def run(model):
        manager = EncoderCudaGraphManager(model.vllm_config, torch.device("cpu"), torch.float32, model)
        specs = model.get_encoder_cudagraph_item_specs(batch)
        via_manager = manager.execute(batch)
        misses, hits = manager.graph_misses, manager.graph_hits
        eager = model.embed_multimodal(**batch)
        try:
            model.prepare_encoder_cudagraph_replay_buffers(batch, manager.max_batch_size, 0)
            guard = ""
        except RuntimeError as exc:
            guard = str(exc)
        try:
            manager.execute(full)  # unpruned images go to the graphs (none captured here)
            full_route = "eager"
        except AssertionError:
            full_route = "graph"
        return {
            "rows": [int(o.shape[0]) for o in via_manager],
            "eager_rows": [int(o.shape[0]) for o in eager],
            "kept": [s.output_tokens for s in specs],
            "grid_tokens": [int(g.prod()) // 4 for g in torch.as_tensor(batch["image_grid_thw"])],
            "equal": all(torch.equal(a, b) for a, b in zip(via_manager, eager, strict=True)),
            "misses": misses,
            "hits": hits,
            "guard": guard,
            "full_route": full_route,
        }

    (got,) = llm.apply_model(run)
    assert got["rows"] == got["eager_rows"] == got["kept"]
    assert all(k < n for k, n in zip(got["kept"], got["grid_tokens"], strict=True))  # really pruned
    assert got["equal"]
    assert got["misses"] == 2 and got["hits"] == 0  # both images eager, none replayed
    assert "reached vLLM's encoder CUDA graph" in got["guard"]
    assert got["full_route"] == "graph"


# ----- budget_scope "prompt": one budget over a request's images (a document's pages), this module's engine ---------
PAGES = ("invoice.jpg", "receipt.jpg", "chart.jpg")


def _compress_pages(folder, prompt, imgs, budget, text_prior):
    """compress(foveate=True, budget_scope="prompt") on the same checkpoint: kept indices per image, pruned ids, and
    the log-probability of each prompt token."""
    import math

    import torch

    from arr_coc import compress, load_processor
    from arr_coc.testing import _model_class

    model = _model_class(FAMILY).from_pretrained(str(folder), dtype=torch.float32).eval()
    processor = load_processor(str(folder))
    inputs = processor(text=[prompt], images=imgs, return_tensors="pt")
    cm = compress(model, budget, processor=processor, foveate=True, budget_scope="prompt", text_prior=text_prior)
    with torch.no_grad():
        logits = cm(**inputs).logits[0].float()
    ids = cm.last_inputs.input_ids[0]
    lp = torch.log_softmax(logits, -1)[:-1].gather(1, ids[1:, None]).squeeze(1)
    return [a.keep.tolist() for a in cm.last_allocation[0]], ids.tolist(), [math.nan] + lp.tolist()


def test_document_budget_is_one_budget_over_the_images(engine):
    """{"budget_scope": "prompt"}: the request's total is the budget over all its images' tokens, split as compress
    splits it (texture: the even split), the engine's logprobs those of compress's pruned path; at 1.0 vLLM's own."""
    llm, folder = engine
    imgs = [image(n) for n in PAGES]
    prompt = chat_prompt(folder, imgs, QUESTION)
    options = {"budget": 0.05, "mode": "texture", "budget_scope": "prompt"}
    keeps, hashes = processor_keeps(llm, prompt, imgs, options)
    hf_keeps, hf_ids, hf_lp = _compress_pages(folder, prompt, imgs, 0.05, text_prior=False)
    assert [k.tolist() for k in keeps] == hf_keeps
    total = sum(len(k) for k in hf_keeps)
    assert sum(int(k.numel()) for k in keeps) == total
    (got,) = generate(llm, [request(prompt, imgs, options)])
    assert got["prompt_ids"] == hf_ids
    assert_logprobs_close(got["prompt_logprobs"], hf_lp)
    assert hashes != processor_keeps(llm, prompt, imgs, {"budget": 0.05, "mode": "texture"})[1]  # another key
    every = {"budget": 1.0, "mode": "texture", "budget_scope": "prompt"}
    own, full = generate(llm, [request(prompt, imgs, None), request(prompt, imgs, every)])
    assert full == own


def test_document_budget_follows_the_page_that_matches_and_each_page_keeps_one(engine):
    """mode 'text': the page whose words match gets the budget; a page compress leaves empty keeps its one best
    token in vLLM (vLLM needs a placeholder per image), taken from the same total."""
    pytest.importorskip("rapidocr", reason="the [ocr] extra is not installed")
    llm, folder = engine
    imgs = [image(n) for n in PAGES]
    prompt = chat_prompt(folder, imgs, QUESTION)
    keeps, _ = processor_keeps(llm, prompt, imgs, {"budget": 0.05, "mode": "text", "budget_scope": "prompt"})
    hf_keeps, _, _ = _compress_pages(folder, prompt, imgs, 0.05, text_prior=True)
    counts = [int(k.numel()) for k in keeps]
    assert sum(counts) == sum(len(k) for k in hf_keeps)
    assert min(counts) >= 1 and 0 in [len(k) for k in hf_keeps]  # compress: an empty page; vLLM: one token


def test_document_budget_below_the_page_count_is_one_clear_error_and_the_engine_goes_on(engine):
    llm, folder = engine
    imgs = [image(n) for n in PAGES]
    prompt = chat_prompt(folder, imgs, QUESTION)
    with pytest.raises(ValueError, match="at least one token per image"):
        generate(llm, [request(prompt, imgs, {"budget": 2, "mode": "texture", "budget_scope": "prompt"})])
    with pytest.raises(ValueError, match="budget_scope"):
        generate(llm, [request(prompt, imgs, {"budget": 0.1, "budget_scope": "document"})])
    (after,) = generate(llm, [request(prompt, imgs, {"budget": 3, "mode": "texture", "budget_scope": "prompt"})])
    assert len(after["tokens"]) == 4


def test_document_budget_keeps_the_cells_of_the_librarys_document_decision(engine, tmp_path):
    """A multi-image request in mode 'text': each image keeps the cells ``allocate_pages`` keeps for the same pages,
    question and budget (floor 1: vLLM needs a placeholder per image): the page split, then each page's share spent
    from its key spans (``spans.refocus_pages``, shared with ``decide_pages``). The OCR is a stand-in
    (tests/spans_pages.py) set on the realizer the plugin holds for the request's relevance folder."""
    pytest.importorskip("rapidocr", reason="the [ocr] extra is not installed")
    from plugin_checks import MAX_PIXELS
    from spans_pages import QUESTION as ASKED
    from spans_pages import config, pages, read_by_stand_in

    from arr_coc import Realizer
    from arr_coc.pages import PagesConfig, allocate_pages
    from arr_coc.vllm.options import decision_device, realizer_for

    llm, folder = engine
    relevance = tmp_path / "relevance"
    Realizer(config()).save_pretrained(relevance)
    realizer = read_by_stand_in(realizer_for(str(relevance), decision_device()))  # the one the plugin will use
    imgs = pages((280, 420))  # already the checkpoint's grid (10 x 15 cells): no resize
    prompt = chat_prompt(folder, imgs, ASKED)
    options = {"budget": 12, "mode": "text", "budget_scope": "prompt", "relevance": str(relevance)}
    keeps, _ = processor_keeps(llm, prompt, imgs, options)
    common = dict(family=FAMILY, max_pixels=MAX_PIXELS[FAMILY], mode="text", floor=1, realizer=realizer)
    doc = allocate_pages(imgs, ASKED, 12, **common)
    assert doc.specific and [p.budget for p in doc.pages] == [1, 10, 1]
    assert [k.tolist() for k in keeps] == [p.keep.tolist() for p in doc.pages]
    plain = allocate_pages(imgs, ASKED, 12, config=PagesConfig(focus=0.0), **common)
    assert [k.tolist() for k in keeps] != [p.keep.tolist() for p in plain.pages]  # the in-page rule ran
    (got,) = generate(llm, [request(prompt, imgs, options)])
    assert len(got["tokens"]) == 4


def test_a_page_in_two_documents_has_two_cache_keys(engine):
    """The split depends on every page, so a page's processor / encoder cache key holds the whole document."""
    llm, folder = engine
    inv, rec, chart = (image(n) for n in PAGES)
    options = {"budget": 0.05, "mode": "texture", "budget_scope": "prompt"}
    _, first = processor_keeps(llm, chat_prompt(folder, [inv, rec], QUESTION), [inv, rec], options)
    _, second = processor_keeps(llm, chat_prompt(folder, [inv, chart], QUESTION), [inv, chart], options)
    _, again = processor_keeps(llm, chat_prompt(folder, [inv, rec], QUESTION), [inv, rec], options)
    assert first[0] != second[0] and first == again
