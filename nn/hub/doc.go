// Package hub finds a Hugging Face model or dataset by name in the cache, downloading it if needed.
//
// [Resolve] turns a name such as "Qwen/Qwen3-0.6B" into a local directory the way transformers
// does: a local path of that name wins; else the Hugging Face cache that transformers and
// huggingface_hub fill, then a download from the Hub into that same cache, so that both share
// one copy. [Options] choose the revision, cache, endpoint and token; errors from the Hub wrap
// [ErrNotFound] or [ErrUnauthorized].
//
// # Cache
//
// The cache ([CacheDir]) is $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub. A model lives in
// models--ORG--NAME/: refs/<revision> holds the commit a branch or tag pointed to,
// snapshots/<commit>/<file> is a relative symlink to blobs/<hash>, the hash being the file's
// sha256 for LFS files and its git blob SHA-1 otherwise. A dataset lives the same way in
// datasets--ORG--NAME/.
//
// # Datasets
//
// [ResolveDataset] finds the files of one config and split of a dataset, as the datasets
// library reads a repository without a loading script: Parquet, JSON Lines or JSON files.
// When the dataset card (README.md, fetched and cached like any file) declares configs in its
// YAML front matter, their data_files patterns choose the files, and the config marked
// default: true (else the only one, else "default") is read when none is named. Otherwise a
// top folder other than data/ is a config, the rest is config "default"; a file belongs to
// the split its folder names, or its name before -NNNNN-of-NNNNN, or a split word its name
// holds between non-word characters (train, test, validation and their synonyms); files
// naming no split are all train. A dataset with no such files is read from the Hub's Parquet
// export on the branch [ConvertedRevision]. Offline, the split is chosen among the cached
// snapshot's files, by the cached card, and a split missing one of its numbered shards is
// refused. [Options.Progress] shows the split's download as it does a model's weights.
//
// # Downloads
//
// Only the files a model needs are fetched: config.json, generation_config.json, the tokenizer
// files and the safetensors weights (model.safetensors, or the shards its index names). A
// download resumes from blobs/<hash>.incomplete and becomes blobs/<hash> only once its hash
// matches the Hub's, so an interrupted or corrupted download is never taken for a whole file.
//
// The Hub is $HF_ENDPOINT (default [DefaultEndpoint]), with $HF_TOKEN (else the token
// `hf auth login` saved) for gated and private models. HF_HUB_OFFLINE=1 ([OfflineFromEnv])
// keeps to the cache, and a Hub out of reach falls back to a cached snapshot that holds the
// config and the weights.
package hub
