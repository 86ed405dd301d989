"""datatrove's tokenizer step on pre-rendered documents (run inside datatrove's own venv).

    python benchmarks/datatrove_job.py INPUT_DIR OUTPUT_DIR TOKENIZER_JSON --workers 2

``INPUT_DIR`` holds ``*.jsonl`` files of ``{"text": rendered sample}`` (datatrove
parallelises by file, so the runner splits the corpus into several files). The
tokenizer is the same model as the pipeline's ``tokenizer.json``; datatrove applies a
file's padding setting as it is, so the runner hands it a copy without padding.
"""

import argparse
import glob
import os


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input_dir")
    parser.add_argument("output_dir")
    parser.add_argument("tokenizer")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.tokens import DocumentTokenizer

    tasks = len(glob.glob(os.path.join(args.input_dir, "*.jsonl")))
    executor = LocalPipelineExecutor(
        pipeline=[
            JsonlReader(args.input_dir, glob_pattern="*.jsonl", text_key="text"),
            DocumentTokenizer(
                output_folder=args.output_dir,
                tokenizer_name_or_path=args.tokenizer,
                eos_token=None,
                shuffle_documents=False,
            ),
        ],
        tasks=tasks,
        workers=args.workers,
        logging_dir=os.path.join(args.output_dir, "logs"),
    )
    executor.run()


if __name__ == "__main__":
    main()
