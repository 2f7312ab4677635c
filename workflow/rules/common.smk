# Names shared by the rules: the dataset, its paths, the model rows and folds to run.

from srdiv.sampling.samples import samples_key
from srdiv.params import REPRESENTATIONS, dataset_settings, lineage, load_params, lookup, merge, setting_files, validate
from srdiv.experiment import model_specs, run_rows
from srdiv.text.defaults import stage_params
from srdiv.report.gather import reference_runs
from srdiv.train.device import tune_workers, uses_gpu

# The setting is params.yaml (and config/main.yaml when no setting is named: the Snakefile's MAIN_TABLE) and
# the --configfile overlays, in order, merged as every srdiv command merges
# them (`run_models+` extends a list; an overlay's `import:` registers its components), then any --config
# values. Every file is checked against srdiv's schema (and the merged config) before the DAG is built: a
# misspelt key or an out-of-range value stops here.
PARAMS_FILES = setting_files(["params.yaml"] + (["config/main.yaml"] if MAIN_TABLE else []),
                             workflow.config_settings.configfiles)
_merged = merge(load_params(PARAMS_FILES), dict(workflow.config_settings.config))
config.clear()
config.update(_merged)
validate(config, " + ".join(PARAMS_FILES))
DATASET = config["dataset"]
DS = dataset_settings(config)
WORK = f"work/{DATASET}"
LOGS = f"logs/{DATASET}"
BENCH = f"benchmarks/{DATASET}"
# A ``study`` (e.g. config/ablations.yaml) trains its rows apart from the dataset's main run:
# it shares the text stages and samples but has its own models, model logs, benchmarks and results (a row
# the main run trained with the same settings and inputs is copied from it: srdiv train --reuse).
STUDY = config.get("study")
NAME = f"{DATASET}-{STUDY}" if STUDY else DATASET
MAIN_MODELS = f"{WORK}/models"
MODELS = f"{WORK}/{STUDY}/models" if STUDY else MAIN_MODELS
MODEL_LOGS = f"logs/{NAME}"
MODEL_BENCH = f"benchmarks/{NAME}"
RESULTS = f"results/{NAME}"
COLLECTION = DS["collection"]
PARAMS = " ".join(f"--params {p}" for p in PARAMS_FILES)
DOCS = f"--docs {DS['docs']}" if DS.get("docs") else ""
DOCS_INPUT = [DS["docs"]] if DS.get("docs") else []
FEATURES_FROM = DS["features"]  # text | dssa-release
DEFAULT_REPR = DS["representation"]
ROWS = run_rows(config)
SPECS = model_specs(config)   # rows with `extends` resolved, parsed
REFERENCE_RUNS = {name: str(path) for name, path in reference_runs(config).items()}
REFERENCES = f"{WORK}/reference_runs"
FOLDS = [int(f) for f in config["folds"]]

wildcard_constraints:
    fold=r"\d+",
    sampling=r"([A-Za-z0-9_.+-]+/)?fold\d+",
    repr="|".join(REPRESENTATIONS),


def tracked(names):
    """``{section: value}`` of these params.yaml sections (dotted keys; absent ones left out).

    As a rule's ``params.sections`` it names what DVC tracks (``srdiv dvc-yaml`` reads the keys)
    and, holding the values, makes Snakemake rerun a job when one of them changes (its params
    rerun trigger): editing a learning rate retrains the rows that use it.
    """
    values = {name: lookup(config, name) for name in names}
    return {name: value for name, value in values.items() if value is not None}


def representation(model):
    """The bundle a row reads: its own ``representation`` or the dataset's.

    The DSSA release holds one set of vectors (the dataset's ``representation``), which every row reads.
    """
    rep = SPECS[model].representation or DEFAULT_REPR
    return DEFAULT_REPR if FEATURES_FROM == "dssa-release" else rep


def prior(model):
    return SPECS[model].prior


def trainable(model):
    return SPECS[model].objective is not None


def samples_file(model, fold):
    """The samples a row trains on: the shared ones or those of its own ``samples`` settings."""
    key = samples_key(config, model)
    return f"{WORK}/samples/{key + '/' if key else ''}fold{fold}/samples.npz"


def model_dir(model, fold):
    return f"{MODELS}/{model}/fold{fold}"


def component_files(model):
    """The files of `import:` that register this row's model or objective: editing one retrains the rows that
    use what it registers, and adding one retrains nothing else (a module name on the Python path is no file)."""
    return [entry for entry in SPECS[model].imported_from() if entry.endswith(".py")]


def required_rows():
    """The rows to run plus every prior they need."""
    rows = list(ROWS)
    for model in rows:
        if prior(model) and prior(model) not in rows:
            rows.append(prior(model))
    return rows


# `--resources gpu=N` counts GPUs. Each job of a row that runs on CUDA takes one `gpu` slot, and a GPU has
# `gpu_jobs` slots (params.yaml): `--resources gpu=1` trains up to `gpu_jobs` such jobs at once on it.
if "gpu" in workflow.global_resources and workflow.global_resources["gpu"].value is not None:
    workflow.register_resource("gpu", workflow.global_resources["gpu"].value * config["gpu_jobs"])


def gpu_share(wildcards):
    """The ``gpu`` slots of a row's train job: 1 for a row that may run on CUDA (``train.device``,
    :func:`srdiv.train.device.uses_gpu`), 0 for a CPU row, which runs on the free cores beside them."""
    return 1 if uses_gpu(SPECS[wildcards.model]) else 0


def train_threads(wildcards):
    """A train job's cores: a row that trains on the CPU trains up to ``train_threads`` (params.yaml) of its
    tune points at once, a process each (:func:`srdiv.train.device.tune_workers`), but takes at most a quarter
    of ``--cores`` (none on 2 or 3 cores: there, one job per core keeps them busier than jobs that wait for
    several free cores at once; docs/lab-notes/schedule.md); any other row takes one. The chosen model is the same."""
    spec = SPECS[wildcards.model]
    cores = workflow.global_resources["_cores"].value    # None where an executor gives each job its own node
    threads = config["train_threads"] if cores is None else min(config["train_threads"], max(1, cores // 4))
    return 1 if uses_gpu(spec) else tune_workers(spec, threads)


def train_priority(wildcards):
    """1 for a row that is another row's prior (its folds unlock the rows that read it, e.g. ListMLE for
    xQuAD): Snakemake starts the ready jobs of higher priority first. 0 for the others."""
    return int(any(prior(row) == wildcards.model for row in SPECS))
