-- The namespaces the session's login is kept to (NULL: not kept), migration 0300.
SELECT sundial_login_namespaces()
