"""A suite is a folder and a line of experiment.SUITES: a suite written here
(Catch's game under the prefix `toy/`, with a flag of its own) trains,
resumes only with its run-defining flag unchanged; and the shipped suites
own their flags while the library imports none of them."""

import json
import os
import re
import sys
import textwrap
from unittest import mock

from absl import flags
import tensorflow as tf

import experiment
from impala_tf import domain as domain_lib
from tests import pipeline_util

REPO_ROOT = pipeline_util.REPO_ROOT

TOY_DOMAIN = textwrap.dedent('''\
    """Catch's game as the suite `toy`, with a flag of its own."""

    import collections

    from absl import flags

    from catch import domain as catch_domain
    from catch import environment
    from impala_tf import domain
    from impala_tf import environments

    flags.DEFINE_boolean('toy_memory', False, 'Hide the ball.')

    ToyConfig = collections.namedtuple(
        'ToyConfig', ['num_action_repeats', 'toy_memory'])


    def _environments(config, level_names, seed):
      return environments.InProcessEnvironments(
          [environment.Catch(seed + index, memory=config.toy_memory)
           for index in range(len(level_names))],
          level_names, config.num_action_repeats)


    def _check_level(level_name):
      if level_name != 'toy/catch':
        raise ValueError(f'unknown toy level {level_name!r}')


    DOMAIN = domain.Domain(
        make_config=lambda flag_values, level_names: ToyConfig(
            flag_values.num_action_repeats, flag_values.toy_memory),
        run_defining_flags=('toy_memory',),
        check_level=_check_level,
        suites={},
        benchmark=None,
        defaults=dict(catch_domain.DOMAIN.defaults, core='lstm'),
        environment_info=lambda config, level_name: domain.EnvironmentInfo(
            environment.NUM_ACTIONS,
            environment.Catch(0, memory=config.toy_memory)
            .observation_spec().shape, 0),
        training_environments=_environments,
        test_level=lambda level_name: level_name,
        test_environments=_environments)
''')


class SuiteRegistryTest(tf.test.TestCase):

  def _register_toy_suite(self):
    """{'toy': its Domain}, loaded from a folder written for this test."""
    root = self.create_tempdir().full_path
    os.makedirs(os.path.join(root, 'toy_suite'))
    open(os.path.join(root, 'toy_suite', '__init__.py'), 'w').close()
    with open(os.path.join(root, 'toy_suite', 'domain.py'), 'w') as f:
      f.write(TOY_DOMAIN)
    sys.path.insert(0, root)
    self.addCleanup(sys.path.remove, root)
    self.addCleanup(sys.modules.pop, 'toy_suite.domain', None)
    self.addCleanup(sys.modules.pop, 'toy_suite', None)
    return domain_lib.load_domains({'toy': 'toy_suite.domain'})

  def test_a_suite_is_a_folder_and_a_registry_line(self):
    logdir = self.create_tempdir().full_path
    settings = dict(level_name='toy/catch', logdir=logdir, num_actors=4,
                    batch_size=4, total_environment_frames=2_000)
    with mock.patch.dict(experiment.DOMAINS, self._register_toy_suite()):
      config = pipeline_util.config(toy_memory=True, **settings)
      self.assertEqual((4, True), tuple(config.suite))
      self.assertEqual('lstm', config.agent.core)  # The suite's default.
      result = experiment.train(config, print_fn=lambda line: None)
      self.assertGreaterEqual(result['frames'], 2_000)
      self.assertIn('toy/catch', result['recent_returns'])
      with open(os.path.join(logdir, 'flags.json')) as f:
        self.assertTrue(json.load(f)['toy_memory'])
      # The suite's run-defining flag guards its checkpoints.
      with self.assertRaisesRegex(experiment.UsageError,
                                  '--toy_memory=True'):
        experiment.train(pipeline_util.config(toy_memory=False, **settings))
    with self.assertRaisesRegex(experiment.UsageError, 'unknown level'):
      pipeline_util.config(level_name='toy/catch')  # Unregistered again.

  def test_each_suite_owns_its_flags(self):
    by_module = flags.FLAGS.flags_by_module_dict()
    for prefix, module in experiment.SUITES.items():
      suite_config = experiment.DOMAINS[prefix].make_config(flags.FLAGS, [])
      own_flags = {flag.name for flag in by_module.get(module, [])}
      self.assertEqual(set(suite_config._fields) - {'num_action_repeats'},
                       own_flags, module)
    self.assertEqual('atari57.domain',
                     flags.FLAGS.find_module_defining_flag('full_action_set'))
    self.assertEqual('dmlab30.domain',
                     flags.FLAGS.find_module_defining_flag('level_cache_dir'))

  def test_the_library_imports_no_suite(self):
    suites = '|'.join(module.split('.')[0]
                      for module in experiment.SUITES.values())
    suite_import = re.compile(rf'^\s*(from|import)\s+({suites})\b', re.M)
    library = os.path.join(REPO_ROOT, 'impala_tf')
    paths = [os.path.join(library, name) for name in os.listdir(library)
             if name.endswith('.py')]
    self.assertGreater(len(paths), 20)
    for path in paths + [os.path.join(REPO_ROOT, 'experiment.py')]:
      with open(path) as f:
        self.assertIsNone(suite_import.search(f.read()), path)


if __name__ == '__main__':
  tf.test.main()
