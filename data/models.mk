# data/models.mk - the default draft/target pipeline, included from the root Makefile.
#   make corpus     Debian packages -> data/corpus/out/{train,valid,test}.{txt,jsonl} + MANIFEST.json
#   make corpus-verify   check the cached .debs and corpus outputs against data/corpus/MANIFEST.json
#   make datasets   test split -> data/datasets/{encyclopedic,sentences,specbench}.jsonl
#   make tokenizer  train split -> data/models/tokenizer/{vocab.json,merges.txt,tokenizer.json}
#   make tokenizer-check  round trip + (if build/sprinter exists) C-vs-Python token ids
#   make models     retrain draft + target from scratch (~60-75 min on one thread), write
#                   data/models/MANIFEST.json (incl. test perplexities)
#   make models-regime  Llama target + distilled Llama draft (2 threads, < 150 min) ->
#                   data/models/regime/{target,draft}/ + MANIFEST.json; resumes from the
#                   checkpoints in $(REGIME_CKPT)/regime-{target,draft} after an interruption
#   make models-regime-check  C engine / reference forward vs llama.py export (random tiny
#                   Llamas, plus the regime dirs when they exist)
# Each step builds the outputs of the earlier steps it needs when they are missing; running a
# step again reproduces the same files (fixed seeds, deterministic ordering).
DATA_PY ?= /usr/bin/python3
DATA_SPRINTER ?= build/sprinter
DATA_CORPUS_OUT := data/corpus/out/train.txt data/corpus/out/valid.txt data/corpus/out/test.txt \
                   data/corpus/out/test.jsonl
DATA_TOKENIZER := data/models/tokenizer/vocab.json data/models/tokenizer/merges.txt

REGIME_THREADS ?= 2
REGIME_CKPT ?= data/cache/train

.PHONY: corpus corpus-verify datasets tokenizer tokenizer-check models models-regime \
        models-regime-check

corpus:
	$(DATA_PY) data/corpus/build_corpus.py

corpus-verify:
	$(DATA_PY) data/corpus/build_corpus.py --verify

$(DATA_CORPUS_OUT) &:
	$(DATA_PY) data/corpus/build_corpus.py

datasets: data/corpus/out/test.jsonl
	$(DATA_PY) data/datasets/build_datasets.py
	$(DATA_PY) data/datasets/build_specbench.py

tokenizer: data/corpus/out/train.txt
	$(DATA_PY) data/tokenizer/train_tokenizer.py --vocab-size 2048
	$(DATA_PY) data/tokenizer/check_tokenizer.py

tokenizer-check: $(DATA_TOKENIZER) data/corpus/out/test.txt
	$(DATA_PY) data/tokenizer/check_tokenizer.py $(if $(wildcard $(DATA_SPRINTER)),--sprinter $(DATA_SPRINTER))

$(DATA_TOKENIZER) &: | data/corpus/out/train.txt
	$(DATA_PY) data/tokenizer/train_tokenizer.py --vocab-size 2048

models: $(DATA_TOKENIZER) data/corpus/out/train.txt data/corpus/out/valid.txt data/corpus/out/test.txt
	sh data/train/train_models.sh

models-regime: $(DATA_TOKENIZER) data/corpus/out/train.txt data/corpus/out/valid.txt data/corpus/out/test.txt
	REGIME_THREADS=$(REGIME_THREADS) REGIME_CKPT=$(REGIME_CKPT) sh data/train/train_regime.sh

models-regime-check:
	$(DATA_PY) data/train/check_llama_export.py --sprinter $(DATA_SPRINTER)
	$(if $(wildcard data/models/regime/target/model.safetensors),$(DATA_PY) data/train/check_llama_export.py --sprinter $(DATA_SPRINTER) --model data/models/regime/target --model data/models/regime/draft)
