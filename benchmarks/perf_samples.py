"""`perf` samples of a training process, told apart by pipeline part.

A sample's part comes from its thread's name (`impala_tf.os_threads`: the
actor threads, `staging`, `dynamic_batching`; the main thread is the
learner's loop) and, for threads the library did not start (ale-py's
vector-environment workers, TensorFlow's thread pools), from the code in
its callchain: ALE's emulator (`ale::stella`), ALE's preprocessing (palette
to grey, resize), or TensorFlow's kernels. `benchmarks/profile.py` uses it.
"""

import collections

# The kernel keeps 15 bytes of a thread's name (`impala_tf.os_threads`).
_KERNEL_NAME_BYTES = 15
_LIBRARY_THREADS = ('staging', 'dynamic_batching')
# oneDNN's just-in-time kernels show as [JIT] or in /tmp/perf-<pid>.map.
_TENSORFLOW_CODE = ('tensorflow', '[JIT]', 'perf-', 'dnnl', 'libiomp',
                    'libgomp')
_PREPROCESSING_NAMES = ('Palette', 'resize', 'Resize', 'preprocess',
                        'Preprocess', 'cv::')


def _code_kind(frame):
  """What one callchain frame (symbol, library) is: a short word."""
  _, library = frame
  if 'libpython' in library:
    return 'Python'
  if '_multiarray' in library or 'numpy' in library:
    return 'numpy'
  if any(name in library for name in _TENSORFLOW_CODE):
    return 'TensorFlow'
  if 'kernel' in library:
    return 'operating system'
  if '_ale_py' in library:
    return 'ALE'
  return 'other native code (libc: copies, allocation)'


def part_of(thread_name, is_main_thread, frames):
  """The pipeline part of one sample: thread name and its callchain, leaf
  first, as (symbol, library) pairs."""
  leaf = _code_kind(frames[0]) if frames else 'unknown'
  if is_main_thread:
    return f'learner thread: {leaf}'
  if thread_name.startswith('actor_'):
    return f'actor threads: {leaf}'
  for name in _LIBRARY_THREADS:
    if thread_name == name[:_KERNEL_NAME_BYTES]:
      return f'{name} thread: {leaf}'
  libraries = ' '.join(library for _, library in frames)
  symbols = ' '.join(symbol for symbol, _ in frames)
  if '_ale_py' in libraries:
    if 'stella' in symbols:
      return 'ALE workers: emulator'
    if any(name in symbols for name in _PREPROCESSING_NAMES):
      return 'ALE workers: preprocessing'
    return 'ALE workers: other (vector environment, unnamed code)'
  if any(name in libraries for name in _TENSORFLOW_CODE):
    return 'TensorFlow pools: kernels of learner step and inference'
  return f'other threads: {leaf}'


def parse_perf_script(text):
  """(thread name, thread id, [(symbol, library), ...]) per sample of
  `perf script -F comm,tid,ip,sym,dso` output."""
  samples = []
  for block in text.split('\n\n'):
    lines = [line for line in block.split('\n') if line.strip()]
    if not lines:
      continue
    header = lines[0].split()
    frames = []
    for line in lines[1:]:
      fields = line.split(None, 1)
      rest = fields[1] if len(fields) > 1 else ''
      symbol, _, library = rest.rpartition(' (')
      frames.append((symbol, library.rstrip(')')))
    samples.append((' '.join(header[:-1]), int(header[-1]), frames))
  return samples


def cores_by_part(samples, main_thread_id, frequency, seconds):
  counts = collections.Counter(
      part_of(name, tid == main_thread_id, frames)
      for name, tid, frames in samples)
  return {part: count / frequency / seconds
          for part, count in counts.most_common()}
