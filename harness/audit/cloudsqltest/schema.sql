-- The subset of CloudStack's `cloud` schema (setup/db/create-schema.sql and the schema-*.sql
-- upgrades that add uuid columns and router_network_ref) that the audit reads: the tables and
-- columns it reads, under CloudStack's names and types. go-mysql-server (cloudsqltest.Start) and
-- ci/setup-mariadb.sh load it; statements end with a ; at the end of a line.

CREATE TABLE `data_center` (
  `id` bigint unsigned NOT NULL AUTO_INCREMENT, `uuid` varchar(40), `name` varchar(255),
  `removed` datetime, PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8;

CREATE TABLE `host` (
  `id` bigint unsigned NOT NULL AUTO_INCREMENT, `uuid` varchar(40), `name` varchar(255) NOT NULL,
  `status` varchar(32) NOT NULL, `type` varchar(32) NOT NULL, `private_ip_address` char(40) NOT NULL,
  `data_center_id` bigint unsigned NOT NULL, `removed` datetime, PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8;

CREATE TABLE `vm_instance` (
  `id` bigint unsigned NOT NULL, `uuid` varchar(40), `name` varchar(255) NOT NULL,
  `instance_name` varchar(255) NOT NULL, `state` varchar(32) NOT NULL, `data_center_id` bigint unsigned NOT NULL,
  `host_id` bigint unsigned, `last_host_id` bigint unsigned, `removed` datetime, `type` varchar(32) NOT NULL,
  `vm_type` varchar(32) NOT NULL, PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8;

CREATE TABLE `networks` (
  `id` bigint unsigned NOT NULL AUTO_INCREMENT, `uuid` varchar(40), `name` varchar(255),
  `gateway` varchar(15), `cidr` varchar(18), `data_center_id` bigint unsigned NOT NULL,
  `state` varchar(32) NOT NULL, `created` datetime NOT NULL, `removed` datetime, PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8;

CREATE TABLE `nics` (
  `id` bigint unsigned NOT NULL AUTO_INCREMENT, `uuid` varchar(40), `instance_id` bigint unsigned,
  `mac_address` varchar(17), `ip4_address` char(40), `network_id` bigint unsigned NOT NULL,
  `state` varchar(32) NOT NULL, `device_id` int(10), `vm_type` varchar(32), `removed` datetime,
  PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8;

CREATE TABLE `router_network_ref` (
  `id` bigint unsigned NOT NULL AUTO_INCREMENT, `router_id` bigint unsigned NOT NULL,
  `network_id` bigint unsigned NOT NULL, `guest_type` char(32), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8;

CREATE TABLE `volumes` (
  `id` bigint unsigned NOT NULL AUTO_INCREMENT, `uuid` varchar(40), `instance_id` bigint unsigned NULL,
  `name` varchar(255), `path` varchar(255), `data_center_id` bigint unsigned NOT NULL,
  `volume_type` varchar(64) NOT NULL, `state` varchar(32), `removed` datetime,
  PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8;
