"""The pod launcher's parts, one module per phase of an attempt's Pod (``pods.launcher`` is the
loop that drives them and the only way in):

* ``settings``: what a host gives the launcher (``LauncherSettings``, ``LaunchHooks``) and hears
  back (``AttemptEnd``);
* ``attempt``: ``PodAttempt``, what the launcher knows of one attempt and its Pod, and the rules
  that tell its Pod from a forgery;
* ``state``: what the phases share (the held attempts, the clients, the clock, the hooks);
* ``starting``: an attempt's Pod created, adopted or refused;
* ``observing``: the Pods read and classified, stale ones swept;
* ``ending``: an ended attempt finished through the job's failure policy, fenced, and its Pod
  released.
"""
