"""JupyterHub settings for the hookviz course on The Littlest JupyterHub (tljh.sh copies this file into
/opt/tljh/config/jupyterhub_config.d/): one torch thread per kernel, as binder/start sets on Binder, and
anyone who knows the workshop password may log in (tljh.sh sets the password)."""

c = get_config()  # noqa: F821 - JupyterHub's config loader provides get_config
c.Spawner.environment.update({"OMP_NUM_THREADS": "1"})
c.Authenticator.allow_all = True
