"""Authorization: Kafka's ACL model (resource patterns, access control entries, bindings
and their filters) and the AclAuthorizer that keeps the ACLs of the metadata store in
memory and answers "may this principal do this operation on this resource?"."""
