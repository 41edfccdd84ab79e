-- The dashboard's surveillance role (issue 32, floor/users.py): sees the play sessions and the
-- advantage-play alerts that no other role sees.
ALTER TABLE dashboard_users DROP CONSTRAINT dashboard_users_role_check;
ALTER TABLE dashboard_users ADD CONSTRAINT dashboard_users_role_check
    CHECK (role IN ('viewer', 'supervisor', 'surveillance'));
